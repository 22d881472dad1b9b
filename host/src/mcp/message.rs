//! One JSON-RPC message run through the dispatcher inside its OpenTelemetry operation: a
//! handshake-era message (a request answered, a notification or a response not), and the
//! operation of any request.

use serde_json::Value;
use tracing::Instrument as _;

use super::dispatch::{Dispatcher, Revision};
use super::observe::Operation;
use super::protocol::{classify, Incoming, Outgoing, Reply, RpcError};
use super::request::Request;
use crate::identity::Identity;

impl Dispatcher {
    /// Runs one handshake-era message: a request answered, a notification or a response not.
    pub(super) async fn handshake_message(
        &self,
        caller: &Identity,
        message: Value,
        version: &str,
    ) -> Option<Outgoing> {
        match classify(message) {
            Err((id, error)) => Some(Outgoing::Error { id, error }),
            Ok(Incoming::Notification { .. } | Incoming::Response) => None,
            Ok(Incoming::Request { id, method, params }) => {
                let request = Request::new(id, method, params);
                let id = request.id.clone();
                let answered = self.observed(caller, request, Revision::Handshake, version, Ok(()));
                Some(match answered.await {
                    Ok(result) => Outgoing::Result { id, result },
                    Err(error) => Outgoing::Error { id, error },
                })
            }
        }
    }

    /// A request of `revision` (served as `version`) answered inside its OpenTelemetry
    /// operation; one that `checked` refused is not run, its error recorded all the same.
    pub(super) async fn observed(
        &self,
        caller: &Identity,
        request: Request,
        revision: Revision,
        version: &str,
        checked: Result<(), RpcError>,
    ) -> Result<Reply, RpcError> {
        let operation = self.operation(&request, version);
        let outcome = match checked {
            Err(e) => Err(e),
            Ok(()) => {
                self.request(caller, request, revision)
                    .instrument(operation.span().clone())
                    .await
            }
        };
        operation.finish(&outcome, self.metrics());
        outcome
    }

    /// The OpenTelemetry MCP span and duration of one request ([`Operation`]); a `tools/call`
    /// names its tool when the server serves one of that name.
    fn operation(&self, request: &Request, version: &str) -> Operation {
        let tool = request.tool_name().filter(|name| self.serves(name));
        Operation::start(
            request.method.as_str(),
            &request.id,
            request.params.as_ref(),
            version,
            tool,
        )
    }
}
