//! `GET {api_prefix}/loan-applications/{id}`: `GetLoanApplicationResponse`, answered by the
//! same plugin as the MCP tool `get_loan_application` (the same sandbox, roles, per-loan scope,
//! field grants and section-completion report), with the bearer token of every REST path. An
//! application the caller may not read is `404`, exactly as an unknown one; errors are
//! `ProblemDetails`. Charged to the caller's budgets and audited as a `tools/call` is.

use axum::extract::{OriginalUri, Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;

use super::rest::{authenticated, problem};
use super::state::AppState;
use crate::plugins::{CallError, ToolCallError};

/// The tool that answers the path.
pub const TOOL: &str = "get_loan_application";

/// `GET {api_prefix}/loan-applications/{id}`.
pub async fn loan_application(
    State(state): State<AppState>,
    OriginalUri(uri): OriginalUri,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Response {
    let instance = uri.path().to_string();
    let caller = match authenticated(&state, &headers, &instance).await {
        Ok(caller) => caller,
        Err(refused) => return refused,
    };
    let arguments = json!({"loanApplicationId": id});
    let route = format!("GET {}/loan-applications/{{id}}", state.config.api_prefix);
    let answered = state
        .dispatcher
        .call_for_rest(&caller, &route, TOOL, &arguments)
        .await;
    match answered {
        Ok(model) => Json(model).into_response(),
        Err(e) => refusal(e, &instance),
    }
}

/// A failed call as the path answers it.
fn refusal(e: CallError, instance: &str) -> Response {
    match e {
        CallError::UnknownTool(_) => problem(
            StatusCode::SERVICE_UNAVAILABLE,
            "The get_loan_application plugin is not installed on this host.",
            instance,
        ),
        CallError::Throttled(refusal, retry) => {
            super::rest_licenses::throttled(&refusal.to_string(), retry, instance)
        }
        CallError::Tool(ToolCallError::InvalidParams(m)) if m.contains("no loan application") => {
            problem(
                StatusCode::NOT_FOUND,
                "No loan application with this id that you may read.",
                instance,
            )
        }
        CallError::Tool(ToolCallError::InvalidParams(m) | ToolCallError::BadRequest(m)) => {
            problem(StatusCode::BAD_REQUEST, &m, instance)
        }
        CallError::Tool(ToolCallError::Forbidden(m)) => {
            problem(StatusCode::FORBIDDEN, &m, instance)
        }
        CallError::Tool(ToolCallError::Timeout(m)) => {
            problem(StatusCode::SERVICE_UNAVAILABLE, &m, instance)
        }
        CallError::Tool(ToolCallError::Internal(m)) => {
            tracing::error!(message = %m, "get_loan_application failed for the REST path");
            problem(
                StatusCode::INTERNAL_SERVER_ERROR,
                "The loan application could not be read.",
                instance,
            )
        }
    }
}
