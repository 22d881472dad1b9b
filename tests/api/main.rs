//! End-to-end tests: a real server on an ephemeral port, real Wasm components built once
//! per run, requests over HTTP.

mod helpers;

mod import;
mod instance_reset;
mod isolation;
mod loan_months;
mod loan_totals;

mod audit;
mod audit_chain;
mod auth;
mod authorization_response;
mod budgets;
mod clients_guide;
mod conformance;
mod connections;
mod cut_totals;
mod data;
mod deploy;
mod dev_idp_guard;
mod differential;
mod directory;
mod entra;
mod function_cache;
mod okta;
// Shared with the attack suite, which uses parts these tests do not.
#[allow(dead_code)]
mod hostile_registry;
mod mcp_modern;
mod mcp_protocol;
mod metadata;
mod metrics;
mod migration;
mod mutations;
mod oauth;
mod openapi;
mod openid_provider;
mod outage;
mod own_thread;
mod person_loans;
mod plugin_bounds;
mod real_clients;
mod registry;
mod registry_entry;
mod registry_fleet;
mod registry_follow;
mod registry_hostile;
mod registry_notices;
mod registry_push;
mod registry_token;
mod reload;
mod report_loans;
mod reports;
mod row_order;
mod sandbox;
mod signing;
mod supply_chain;
mod threat_model;
mod tools_list;
mod upstream_idp;
mod views;
mod vocabulary;
mod warehouse_counts;
mod wit_versions;
