//! `GET {api_prefix}/users/{userId}/licenses` (and `…/users/me/licenses`, the caller's):
//! `GetUserLicensesResponse`, with the bearer token and the checks of `get_user_licenses`: the
//! default five roles, then the per-user access check (`crate::data::licensing`: the caller's
//! own; Admin any agent's; a ConciergeKey the agents they manage; no Processor branch). A user
//! the caller may not read is `404`, exactly as an unknown one. Charged to the caller's
//! budgets and audited.

use axum::extract::{OriginalUri, Path, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use loanhost_models::licensing::{GetUserLicensesResponse, UserLicenseInfo};

use super::rest::{authenticated, problem, unavailable};
use super::state::AppState;
use crate::data::licensing;
use crate::data::values::parse_uuid;
use crate::identity::BORROWER_READER_ROLES;

/// The path segment that names the caller.
pub const ME: &str = "me";

/// `GET {api_prefix}/users/{userId}/licenses`: charged to the caller's budgets (one call, and
/// the reply's bytes) and audited, the line naming the route, never the user id asked for.
pub async fn user_licenses(
    State(state): State<AppState>,
    OriginalUri(uri): OriginalUri,
    Path(user): Path<String>,
    headers: HeaderMap,
) -> Response {
    let instance = uri.path().to_string();
    let caller = match authenticated(&state, &headers, &instance).await {
        Ok(caller) => caller,
        Err(refused) => return refused,
    };
    let route = format!("GET {}/users/{{userId}}/licenses", state.config.api_prefix);
    let mut ticket = match state.dispatcher.admit_rest(&caller, &route).await {
        Ok(ticket) => ticket,
        Err((refusal, retry)) => return throttled(&refusal.to_string(), retry, &instance),
    };
    let (outcome, response, bytes) = match answer(&state, &caller, &user, &instance).await {
        Ok(body) => {
            let body = serde_json::to_vec(&body).expect("licences serialise");
            let bytes = body.len() as u64;
            ticket.charge_result(bytes);
            let response = (
                [(
                    header::CONTENT_TYPE,
                    HeaderValue::from_static("application/json"),
                )],
                body,
            )
                .into_response();
            ("ok", response, bytes)
        }
        Err((outcome, refused)) => (outcome, refused, 0),
    };
    state
        .dispatcher
        .audit_rest(&caller, &route, outcome, bytes)
        .await;
    response
}

/// The caller's answer for `user`, or the refusal with its audit outcome.
async fn answer(
    state: &AppState,
    caller: &crate::identity::Identity,
    user: &str,
    instance: &str,
) -> Result<GetUserLicensesResponse, (&'static str, Response)> {
    // The tool's roles: the default five.
    if !caller.has_any(&BORROWER_READER_ROLES) {
        return Err((
            "forbidden",
            problem(
                StatusCode::FORBIDDEN,
                "Reading licences needs one of the roles Admin, Processor, DualLicensedAgent, \
                 ConciergeKey or Agent.",
                instance,
            ),
        ));
    }
    let invalid = |detail: &str| {
        (
            "invalid_params",
            problem(StatusCode::BAD_REQUEST, detail, instance),
        )
    };
    let user = match user {
        ME => caller.user_id.clone(),
        other => match parse_uuid(other) {
            Some(u) => u,
            None => {
                return Err(invalid(&format!(
                    "`{other}` is not a user id (a UUID) or `{ME}`."
                )))
            }
        },
    };
    let licenses = match licensing::readable(&state.db, caller, &user).await {
        Ok(Some(licenses)) => licenses,
        Ok(None) => {
            return Err((
                "invalid_params",
                problem(
                    StatusCode::NOT_FOUND,
                    "No user with this id whose licences you may read.",
                    instance,
                ),
            ))
        }
        Err(e) => {
            tracing::error!(error = %e, "cannot read licences");
            return Err(("unavailable", unavailable(instance)));
        }
    };
    let Ok(user_id) = user.parse() else {
        return Err(invalid("The user id is not a UUID."));
    };
    Ok(GetUserLicensesResponse {
        user_id,
        count: licenses.len() as i32,
        licenses: Some(
            licenses
                .into_iter()
                .map(|l| UserLicenseInfo {
                    state: Some(l.state),
                    state_license_number: l.number,
                    expiration_year: l.expiration_year,
                })
                .collect(),
        ),
    })
}

/// `429` with `Retry-After`: a budget of the caller's is spent.
pub(super) fn throttled(detail: &str, retry: u64, instance: &str) -> Response {
    let mut resp = problem(StatusCode::TOO_MANY_REQUESTS, detail, instance);
    if let Ok(v) = HeaderValue::from_str(&retry.to_string()) {
        resp.headers_mut().insert(header::RETRY_AFTER, v);
    }
    resp
}
