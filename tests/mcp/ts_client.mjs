// A real MCP client, the TypeScript SDK's, against the suite (run by test_ts_client.py):
//   node ts_client.mjs http  URL TOKEN
//   node ts_client.mjs stdio PYTHON AGENT_ADDR ROOT
// Lists the tools, calls every one and reads a file resource, then prints one JSON
// object of what it saw on stdout for the test to check.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [kind, ...rest] = process.argv.slice(2);

function transport() {
  if (kind === "http") {
    const [url, token] = rest;
    return new StreamableHTTPClientTransport(new URL(url), {
      requestInit: { headers: { Authorization: `Bearer ${token}` } },
    });
  }
  const [python, agent, root] = rest;
  return new StdioClientTransport({
    command: python,
    args: ["-m", "services.cli", "mcp", "--agent", agent],
    cwd: root,
    env: { ...process.env, S2C_LOG_FORMAT: "json" },
    stderr: "inherit",
  });
}

const text = (result) => result.content.filter((c) => c.type === "text").map((c) => c.text).join(" ");

const client = new Client({ name: "s2c-ts-test", version: "1.0.0" });
await client.connect(transport());
const seen = { progress: [] };
try {
  seen.tools = (await client.listTools()).tools.map((t) => t.name).sort();
  const created = await client.callTool(
    { name: "generate_page", arguments: { prompt: "a bakery landing page", options: 1, models: ["demo"] } },
    undefined,
    { onprogress: (p) => seen.progress.push(p.message ?? "") },
  );
  seen.created = created.structuredContent;
  seen.createdError = created.isError ?? false;
  const id = created.structuredContent.generation_id;
  const file = created.structuredContent.options[0].files[0];
  const read = await client.readResource({ uri: file.uri });
  seen.resourceBytes = Buffer.byteLength(read.contents[0].text, "utf8");
  seen.fileBytes = file.bytes;
  const updated = await client.callTool({
    name: "update_page",
    arguments: { generation_id: id, option: 0, instruction: "Make the title red" },
  });
  seen.updated = updated.structuredContent.status;
  seen.record = (await client.callTool({ name: "get_generation", arguments: { generation_id: id } }))
    .structuredContent.status;
  seen.models = (await client.callTool({ name: "list_models", arguments: {} })).structuredContent.models.map(
    (m) => m.id,
  );
  const capture = await client.callTool({ name: "capture_url", arguments: { url: "https://example.test/" } });
  seen.capture = { isError: capture.isError ?? false, text: text(capture) };
  const bad = await client.callTool({ name: "generate_page", arguments: { prompt: "x", options: -1 } });
  seen.bad = { isError: bad.isError ?? false, text: text(bad) };
} finally {
  await client.close();
}
process.stdout.write(JSON.stringify(seen) + "\n");
