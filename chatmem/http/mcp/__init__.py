"""The MCP endpoint (SPEC §5), in four parts.

- `transport`: Streamable HTTP on Flask, the Host/Origin checks, the two eras;
- `protocol`: the method table (`initialize`, `tools/*`, ...) on the one dispatch path;
- `rpc`: JSON-RPC shapes and error codes both eras share;
- `sessions`: which chatmem session a request belongs to;
- `resources`: memory as MCP resources and the `start-task` prompt.
"""
