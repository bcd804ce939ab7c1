"""An independent MCP client (the official Python SDK) against `sim-worker mcp-serve`.

    python3 -m venv /tmp/mcp-venv && /tmp/mcp-venv/bin/pip install mcp==2.3.0
    /tmp/mcp-venv/bin/python examples/mcp/python_client.py target/release/sim-worker \
        sqlite://out/eurusd/sim.db

It initializes, lists the tools, calls recall_symbol_history and search_trade_memory, and shows
that a bad argument is a tool error (isError) and an unknown tool a protocol error. The tests
drive the same server with the Rust SDK (`crates/sim-worker/tests/it/mcp_serve.rs`); this is the
check from outside.
"""
import asyncio, json, sys
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

async def main():
    params = StdioServerParameters(command=sys.argv[1], args=["mcp-serve", "--db", sys.argv[2]])
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as s:
            init = await s.initialize()
            print("server:", init.server_info.name, init.server_info.version, "protocol", init.protocol_version)
            tools = await s.list_tools()
            print("tools:", [t.name for t in tools.tools])
            r = await s.call_tool("recall_symbol_history", {"symbol": "EURUSD", "limit": 3})
            body = r.structured_content or json.loads(r.content[0].text)
            print("recall_symbol_history: isError", r.is_error, "stats", json.dumps(body["stats"]))
            r = await s.call_tool("search_trade_memory", {"query": "short grade F stop", "limit": 2})
            body = r.structured_content or json.loads(r.content[0].text)
            print("search_trade_memory: isError", r.is_error, "hits", len(body["hits"]))
            for h in body["hits"]:
                print("  ", h["kind"], h["at"], h["text"].splitlines()[0])
            r = await s.call_tool("search_trade_memory", {"query": ""})
            print("empty query: isError", r.is_error, r.content[0].text[:120])
            try:
                await s.call_tool("no_such_tool", {})
            except Exception as e:
                print("unknown tool: protocol error:", type(e).__name__, str(e)[:80])

asyncio.run(main())
