"""Checks every tool's results against its own outputSchema with an independent JSON Schema
validator (python-jsonschema, Draft 2020-12 with format checking), through the official
Python MCP SDK.

  output_schemas.py URL TOKEN CALLS_FILE

CALLS_FILE is a JSON array of {"tool": NAME, "arguments": {...}}. Prints one JSON line:
{"tools": [...], "checked": N, "failures": [...], "tamperedCaught": N}. A result that the
schema accepts is also tampered with (an unknown top-level property, then a required property
removed) and must then be refused, so a schema that accepts anything cannot pass.
"""

import asyncio
import json
import sys

import httpx2
import jsonschema
from mcp import Client
from mcp.client.streamable_http import streamable_http_client


async def main(url: str, token: str, calls: list) -> dict:
    failures = []
    checked = 0
    tampered_caught = 0
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60) as hc:
        async with Client(streamable_http_client(url, http_client=hc), mode="legacy") as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            for call in calls:
                name, arguments = call["tool"], call["arguments"]
                schema = tools[name].output_schema
                if schema is None:
                    failures.append({"tool": name, "error": "no outputSchema"})
                    continue
                validator_cls = jsonschema.Draft202012Validator
                validator_cls.check_schema(schema)
                validator = validator_cls(schema, format_checker=validator_cls.FORMAT_CHECKER)
                result = await client.call_tool(name, arguments)
                if result.is_error:
                    failures.append({"tool": name, "arguments": arguments,
                                     "error": "tool error: " + result.content[0].text})
                    continue
                content = result.structured_content
                errors = [e.message for e in validator.iter_errors(content)]
                if errors:
                    failures.append({"tool": name, "arguments": arguments, "errors": errors[:5]})
                    continue
                text = json.loads(result.content[0].text)
                if text != content:
                    failures.append({"tool": name, "arguments": arguments,
                                     "error": "text content differs from structuredContent"})
                checked += 1
                extra = dict(content, unexpectedProperty=1)
                missing = dict(content)
                missing.pop(schema["required"][0])
                if not validator.is_valid(extra) and not validator.is_valid(missing):
                    tampered_caught += 1
                else:
                    failures.append({"tool": name, "error": "schema accepts a tampered result"})
    return {"tools": sorted(tools), "checked": checked, "failures": failures,
            "tamperedCaught": tampered_caught}


if __name__ == "__main__":
    url, token, calls_file = sys.argv[1:4]
    with open(calls_file) as f:
        calls = json.load(f)
    print(json.dumps(asyncio.run(main(url, token, calls))))
