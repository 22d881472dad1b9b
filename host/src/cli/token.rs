//! `loanhost token`: a token of the running dev IdP for a demo user, signed with the key that
//! server keeps in its cache folder.

use std::process::ExitCode;

use loanhost::config::Config;

/// Mints a token for `email` with the dev IdP's key (never a new key: a token signed with
/// any key but the running server's is one the server refuses, with an empty 401, wherever
/// this command runs from).
pub async fn token(config: &Config, email: &str) -> anyhow::Result<ExitCode> {
    let path = loanhost::app::dev_idp_key_path(config);
    if !path.exists() {
        let shown = std::path::absolute(&path).unwrap_or_else(|_| path.clone());
        anyhow::bail!(
            "no dev IdP key at {}: `loanhost token` signs with the key the dev server \
             created in its LOANHOST_CACHE_DIR on its first start. Run this command in the \
             folder the server was started from (the clone, for `make run`), or set \
             LOANHOST_CACHE_DIR to that server's cache folder (`make run` prints the \
             command to copy)",
            shown.display()
        );
    }
    let key = loanhost::oauth::devidp::SigningKey::load_or_create(&path)?;
    let issuer = format!("{}/dev-idp", config.base_url);
    if config.idp.issuer != issuer {
        anyhow::bail!(
            "LOANHOST_IDP_ISSUER is {}, not the dev IdP: mint tokens with that IdP instead",
            config.idp.issuer
        );
    }
    let token = key
        .mint(
            &issuer,
            email,
            &config.mcp_audience,
            "offline_access",
            config.dev_idp_token_ttl,
        )
        .map_err(|e| anyhow::anyhow!(e))?;
    if let Some(warning) = unknown_agent_warning(&config.database_url, email).await {
        eprintln!("warning: {warning}");
    }
    println!("{token}");
    Ok(ExitCode::SUCCESS)
}

/// Why a token for `email` will be refused by a server on `database_url`, if the database
/// says so: no active agent has that email. Nothing when the database cannot be asked (a
/// SQLite file that does not exist is not created).
async fn unknown_agent_warning(database_url: &str, email: &str) -> Option<String> {
    if let Some(file) = database_url.strip_prefix("sqlite://") {
        let file = file.split('?').next().unwrap_or(file);
        if !std::path::Path::new(file).exists() {
            return Some(format!(
                "the database {database_url} does not exist here, so {email} could not be \
                 checked; run this command in the folder the server was started from"
            ));
        }
    }
    let lookup = async {
        let db = loanhost::data::Db::open(database_url).await.ok()?;
        db.agent_by_email(email).await.ok()
    };
    match tokio::time::timeout(std::time::Duration::from_secs(5), lookup).await {
        Ok(Some(None)) => Some(format!(
            "{email} is not an active agent of {database_url}: the server will answer 401 to \
             this token (the demo users are listed by `make run`)"
        )),
        _ => None,
    }
}
