"""The MCP endpoint (SPEC §5), in seven parts.

- `transport`: Streamable HTTP on Flask, the two eras;
- `security`: the Host and Origin checks (DNS rebinding);
- `protocol`: the method table (`initialize`, `tools/*`, ...) on the one dispatch path;
- `params`: each method's params model, where params are checked;
- `rpc`: JSON-RPC shapes and error codes both eras share;
- `sessions`: which chatmem session a request belongs to;
- `resources`: memory as MCP resources and the `start-task` prompt.
"""
