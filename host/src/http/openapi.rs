//! The REST API description: an OpenAPI 3.1 document, `info.version` `v1.2`, whose
//! `components.schemas` are generated from the models crate (every shared model of the spec,
//! the reporting records and the token request), served at `GET {api_prefix}/openapi.json`
//! and printed by `loanhost openapi`.
//!
//! OpenAPI 3.1's schema object is JSON Schema 2020-12, which is what `schemars` writes, so the
//! components are the models' own schemas (the same generator the plugins' `outputSchema`s
//! come from); the few operations are written here. Why not `utoipa`: see `docs/decisions/0020-models-and-schemas-from-one-crate.md`.

use serde_json::{json, Value};

/// The version of the REST API description the spec names.
pub const API_VERSION: &str = "v1.2";

/// Where the description is served, under `{api_prefix}`.
pub const DESCRIPTION_PATH: &str = "/openapi.json";

/// The media types the token endpoint accepts, the spec's OData-flavoured JSON among them.
const TOKEN_MEDIA_TYPES: [&str; 3] = [
    "application/json",
    "application/json;odata.metadata=minimal;odata.streaming=true",
    "application/*+json",
];

fn schema_ref(name: &str) -> Value {
    json!({"$ref": format!("{}{name}", loanhost_models::catalog::COMPONENTS_PATH)})
}

fn problem(description: &str, model: &str) -> Value {
    json!({
        "description": description,
        "content": {"application/problem+json": {"schema": schema_ref(model)}}
    })
}

/// The whole document for a server at `base_url` whose REST API is under `api_prefix`.
pub fn document(base_url: &str, api_prefix: &str) -> Value {
    let token_body: serde_json::Map<String, Value> = TOKEN_MEDIA_TYPES
        .iter()
        .map(|m| {
            (
                m.to_string(),
                json!({"schema": schema_ref("OAuthTokenRequest")}),
            )
        })
        .collect();
    json!({
        "openapi": "3.1.0",
        "info": {
            "title": "Loan Platform REST API",
            "version": API_VERSION,
            "description": "The REST surface of the loan platform service: the token endpoint and the shared data models. The reporting tools are served over MCP at /mcp (not described here); their result records are included among the schemas because plugins build their results from them.",
        },
        "jsonSchemaDialect": "https://spec.openapis.org/oas/3.1/dialect/base",
        "servers": [{"url": base_url}],
        "tags": [
            {"name": "OAuth", "description": "Token generation."},
            {"name": "Licensing", "description": "Users' state licences."},
            {"name": "Description", "description": "This document."}
        ],
        "paths": {
            format!("{api_prefix}/oauth/token"): {
                "post": {
                    "tags": ["OAuth"],
                    "operationId": "generateToken",
                    "summary": "REST token generation",
                    "description": "Checks the bearer token in the Authorization header (bearer only). The body is optional: both fields may be absent or null, and other properties are ignored.",
                    "security": [{"bearer": []}],
                    "parameters": [{
                        "name": "Accept", "in": "header", "required": false,
                        "schema": {"type": "string", "default": "*/*"}
                    }],
                    "requestBody": {"required": false, "content": token_body},
                    "responses": {
                        "200": {"description": "Success"},
                        "400": problem("The body is not a JSON object with string or null `client_id`/`client_secret`.", "ValidationProblemDetails"),
                        "401": problem("No bearer token, or one that is not valid.", "ProblemDetails"),
                        "415": problem("The body is not JSON.", "ProblemDetails"),
                        "503": problem("The platform database is unavailable; retry after the Retry-After header's seconds.", "ProblemDetails")
                    }
                }
            },
            format!("{api_prefix}/users/{{userId}}/licenses"): {
                "get": {
                    "tags": ["Licensing"],
                    "operationId": "getUserLicenses",
                    "summary": "A user's state licences",
                    "description": "The licences of the user `userId` (`me`: the caller). The caller needs one of the roles Admin, Processor, DualLicensedAgent, ConciergeKey or Agent, and may read their own licences, any agent's as Admin, and the agents they manage as ConciergeKey (no Processor branch). A user the caller may not read is answered exactly as an unknown one (404).",
                    "security": [{"bearer": []}],
                    "parameters": [{
                        "name": "userId", "in": "path", "required": true,
                        "description": "The user's id, or `me`.",
                        "schema": {"type": "string"}
                    }],
                    "responses": {
                        "200": {"description": "Success", "content": {"application/json": {"schema": schema_ref("GetUserLicensesResponse")}}},
                        "400": problem("`userId` is neither a UUID nor `me`.", "ProblemDetails"),
                        "401": problem("No bearer token, or one that is not valid.", "ProblemDetails"),
                        "403": problem("The caller holds none of the roles that read licences.", "ProblemDetails"),
                        "404": problem("No user with this id whose licences the caller may read.", "ProblemDetails"),
                        "429": problem("The caller's budget is spent; retry after the Retry-After header's seconds.", "ProblemDetails"),
                        "503": problem("The platform database is unavailable; retry after the Retry-After header's seconds.", "ProblemDetails")
                    }
                }
            },
            format!("{api_prefix}/loan-applications/{{loanApplicationId}}"): {
                "get": {
                    "tags": ["LoanApplications"],
                    "operationId": "getLoanApplication",
                    "summary": "One loan application and whether it is ready to submit",
                    "description": "The loan application `loanApplicationId`, answered by the plugin behind the MCP tool `get_loan_application` with the same roles (Admin, Processor, DualLicensedAgent, ConciergeKey, Agent, CompanyAdmin) and the per-loan scope: Admin and Processor every application, a CompanyAdmin its company's, everyone else those of the loans in their reporting scope. An application out of scope is answered exactly as an unknown one (404). `sectionCompletion` follows the specification's rules. A borrower's SSN, encrypted SSN, birth date, demographics, declarations, credit scores, FICO, asset account numbers and `updatedByIp` are always null: the service never stores them.",
                    "security": [{"bearer": []}],
                    "parameters": [{
                        "name": "loanApplicationId", "in": "path", "required": true,
                        "description": "The application's id (a UUID).",
                        "schema": {"type": "string", "format": "uuid"}
                    }],
                    "responses": {
                        "200": {"description": "Success", "content": {"application/json": {"schema": schema_ref("GetLoanApplicationResponse")}}},
                        "400": problem("`loanApplicationId` is not a UUID.", "ProblemDetails"),
                        "401": problem("No bearer token, or one that is not valid.", "ProblemDetails"),
                        "403": problem("The caller holds none of the roles that read loan applications.", "ProblemDetails"),
                        "404": problem("No loan application with this id that the caller may read.", "ProblemDetails"),
                        "429": problem("The caller's budget is spent; retry after the Retry-After header's seconds.", "ProblemDetails"),
                        "503": problem("The platform database or the plugin is unavailable.", "ProblemDetails")
                    }
                }
            },
            format!("{api_prefix}{DESCRIPTION_PATH}"): {
                "get": {
                    "tags": ["Description"],
                    "operationId": "getApiDescription",
                    "summary": "This API description",
                    "security": [],
                    "responses": {
                        "200": {"description": "The OpenAPI 3.1 document.", "content": {"application/json": {"schema": {"type": "object"}}}}
                    }
                }
            }
        },
        "components": {
            "schemas": loanhost_models::catalog::schemas(),
            "securitySchemes": {
                "bearer": {
                    "type": "http", "scheme": "bearer", "bearerFormat": "JWT",
                    "description": "An access token from the identity provider (the same one /mcp takes)."
                }
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_reference_resolves_and_the_token_endpoint_is_described() {
        let doc = document("http://127.0.0.1:8080", "/api");
        assert_eq!(doc["info"]["version"], "v1.2");
        let schemas = doc["components"]["schemas"].as_object().unwrap();
        fn refs(v: &Value, out: &mut Vec<String>) {
            match v {
                Value::Object(o) => {
                    if let Some(Value::String(r)) = o.get("$ref") {
                        out.push(r.clone());
                    }
                    o.values().for_each(|v| refs(v, out));
                }
                Value::Array(a) => a.iter().for_each(|v| refs(v, out)),
                _ => {}
            }
        }
        let mut all = Vec::new();
        refs(&doc, &mut all);
        assert!(all.len() > 50);
        for r in all {
            let name = r.strip_prefix("#/components/schemas/").expect(&r);
            assert!(schemas.contains_key(name), "{r} does not resolve");
        }
        let post = &doc["paths"]["/api/oauth/token"]["post"];
        assert_eq!(post["responses"]["200"]["description"], "Success");
        assert!(post["requestBody"]["content"]
            .as_object()
            .unwrap()
            .keys()
            .any(|k| k.contains("odata")));
    }
}
