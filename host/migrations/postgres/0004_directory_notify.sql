-- The in-memory agent directory (host/src/data/directory.rs) is dropped the moment an agent,
-- its roles or its managed agents change: every statement that writes these tables, whoever
-- runs it, signals `loanhost_directory` (delivered when its transaction commits).
CREATE FUNCTION loanhost_directory_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('loanhost_directory', TG_TABLE_NAME);
    RETURN NULL;
END
$$;
CREATE TRIGGER agents_directory AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON agents
    FOR EACH STATEMENT EXECUTE FUNCTION loanhost_directory_changed();
CREATE TRIGGER agent_roles_directory AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON agent_roles
    FOR EACH STATEMENT EXECUTE FUNCTION loanhost_directory_changed();
CREATE TRIGGER agent_managed_directory AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON agent_managed
    FOR EACH STATEMENT EXECUTE FUNCTION loanhost_directory_changed();
