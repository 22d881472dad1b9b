"""`report_loans` as a plugin team would otherwise write it: a small native MCP server in Python,
on the official SDK (`mcp`, streamable HTTP, stateless, JSON answers), reading the same SQLite
file as loanhost with the standard library's `sqlite3`. It checks the same bearer tokens (RS256
against the dev IdP's public key, issuer and audience), finds the caller by the token's email,
and answers the dimension groupings (None, Status, LoanType, Purpose) of `report_loans` for an
Agent's own loans (officer, assistant or referrer), exactly as loanhost does. The `languages`
benchmark (host/benches/languages.rs) runs it beside the loanhost servers and checks its answer
equals theirs before it measures.

Usage: native_mcp_server.py PORT SQLITE_FILE JWKS_FILE ISSUER AUDIENCE
"""

from __future__ import annotations

import json
import sqlite3
import sys
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

import jwt
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import MCPServer
from mcp.server.auth.middleware.auth_context import get_access_token

PORT, DB, JWKS, ISSUER, AUDIENCE = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5]
KEYS = {k["kid"]: jwt.PyJWK(k) for k in json.load(open(JWKS))["keys"]}
SCALE = Decimal(10000)
COLUMNS = {"Status": "status", "LoanType": "loan_type", "Purpose": "purpose"}
FIELDS = {
    "LoanAmount": "loan_amount",
    "LockedCompensation": "locked_compensation",
    "EstimatedCompensation": "estimated_compensation",
}

db = sqlite3.connect(f"file:{DB}?mode=ro", uri=True, check_same_thread=False)


class Verifier:
    """Bearer tokens of the dev IdP: RS256, its issuer, this server's audience, not expired."""

    async def verify_token(self, token: str) -> AccessToken | None:
        try:
            kid = jwt.get_unverified_header(token).get("kid")
            claims = jwt.decode(
                token, KEYS[kid], algorithms=["RS256"], issuer=ISSUER, audience=AUDIENCE
            )
        except (jwt.PyJWTError, KeyError):
            return None
        return AccessToken(
            token=token, client_id="bench", scopes=[], expires_at=claims["exp"],
            subject=claims["sub"], claims=claims,
        )


server = MCPServer(
    "native-report-loans",
    token_verifier=Verifier(),
    auth=AuthSettings(issuer_url=ISSUER, resource_server_url=AUDIENCE),
    log_level="WARNING",
)


def number(d: Decimal | None) -> Any:
    """An amount as a JSON number: an int when whole, else a float, whose shortest text is the
    decimal itself for amounts of this size (15 significant digits and fewer)."""
    if d is None:
        return None
    return int(d) if d == d.to_integral_value() else float(d)


@server.tool(structured_output=True)
def report_loans(
    groupBy: str = "None", metric: str = "Count", metricField: str = "LoanAmount"
) -> dict[str, Any]:
    """Counts and sum/average/min/max of a money field over the caller's loans, by dimension."""
    email = (get_access_token().claims or {}).get("email", "")
    me = db.execute("SELECT id FROM agents WHERE email_key = ?", (email.lower(),)).fetchone()
    if me is None or groupBy not in ("None", *COLUMNS) or metricField not in FIELDS:
        raise ValueError("unknown caller or argument")
    key, field = COLUMNS.get(groupBy, "'all'"), FIELDS[metricField]
    rows = db.execute(
        f"SELECT {key}, COUNT(*), COUNT({field}), SUM({field}), MIN({field}), MAX({field}) "
        "FROM loans WHERE loan_officer_id = ?1 OR loan_assistant_id = ?1 OR referring_agent_id = ?1 "
        f"GROUP BY 1",
        (me[0],),
    ).fetchall()
    buckets = []
    for k, n, with_value, total, low, high in rows:
        has = with_value > 0
        bucket = {"key": k if k is not None else "Unknown", "keyId": None, "count": n}
        if has:
            average = (Decimal(total) / SCALE / with_value).quantize(Decimal("0.01"), ROUND_HALF_UP)
            bucket |= {"sum": number(Decimal(total) / SCALE), "average": number(average),
                       "min": number(Decimal(low) / SCALE), "max": number(Decimal(high) / SCALE)}
        chosen = {"Count": n, "Sum": bucket.get("sum"), "Average": bucket.get("average"),
                  "Min": bucket.get("min"), "Max": bucket.get("max")}[metric]
        bucket["value"] = chosen if metric == "Count" or has else None
        buckets.append(bucket)
    buckets.sort(key=lambda b: (-b["count"], b["key"]))
    return {
        "groupBy": groupBy, "metric": metricField, "function": metric,
        "totalCount": sum(b["count"] for b in buckets), "bucketCount": len(buckets[:100]),
        "truncated": len(buckets) > 100, "buckets": buckets[:100],
    }


if __name__ == "__main__":
    server.run("streamable-http", host="127.0.0.1", port=int(PORT), json_response=True,
               stateless_http=True)
