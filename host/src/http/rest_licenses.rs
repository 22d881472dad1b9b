//! `GET {api_prefix}/users/{userId}/licenses` (and `…/users/me/licenses`, the caller's):
//! `GetUserLicensesResponse`, with the bearer token and the checks of `get_user_licenses`: the
//! default five roles, then the per-user access check (`crate::data::licensing`: the caller's
//! own; Admin any agent's; a ConciergeKey the agents they manage; no Processor branch). A user
//! the caller may not read is `404`, exactly as an unknown one.

use axum::extract::{OriginalUri, Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use loanhost_models::licensing::{GetUserLicensesResponse, UserLicenseInfo};

use super::rest::{authenticated, problem, unavailable};
use super::state::AppState;
use crate::data::licensing;
use crate::data::values::parse_uuid;
use crate::identity::BORROWER_READER_ROLES;

/// The path segment that names the caller.
pub const ME: &str = "me";

/// `GET {api_prefix}/users/{userId}/licenses`.
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
    // The tool's roles: the default five.
    if !caller.has_any(&BORROWER_READER_ROLES) {
        return problem(
            StatusCode::FORBIDDEN,
            "Reading licences needs one of the roles Admin, Processor, DualLicensedAgent, \
             ConciergeKey or Agent.",
            &instance,
        );
    }
    let user = match user.as_str() {
        ME => caller.user_id.clone(),
        other => match parse_uuid(other) {
            Some(u) => u,
            None => {
                return problem(
                    StatusCode::BAD_REQUEST,
                    &format!("`{other}` is not a user id (a UUID) or `{ME}`."),
                    &instance,
                )
            }
        },
    };
    let licenses = match licensing::readable(&state.db, &caller, &user).await {
        Ok(Some(licenses)) => licenses,
        Ok(None) => {
            return problem(
                StatusCode::NOT_FOUND,
                "No user with this id whose licences you may read.",
                &instance,
            )
        }
        Err(e) => {
            tracing::error!(error = %e, "cannot read licences");
            return unavailable(&instance);
        }
    };
    let Ok(user_id) = user.parse() else {
        return problem(
            StatusCode::BAD_REQUEST,
            "The user id is not a UUID.",
            &instance,
        );
    };
    Json(GetUserLicensesResponse {
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
    .into_response()
}
