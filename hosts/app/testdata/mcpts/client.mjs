// An MCP client built on the official TypeScript SDK, driven by
// hosts/app/mcpts_e2e_test.go over stdin and stdout: it prints one JSON line
// per step and, after the write that waits for approval, reads one line from
// stdin (sent once the test approved the write elsewhere) before asking for
// the outcome.
//
// usage: node client.mjs <mcp url> <token> <spec session id>
import { createInterface } from "node:readline";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [url, token, session] = process.argv.slice(2);
const out = (step, value) => process.stdout.write(JSON.stringify({ step, value }) + "\n");
const text = (res) => res.content?.[0]?.text ?? "";

const lines = createInterface({ input: process.stdin })[Symbol.asyncIterator]();

const client = new Client({ name: "ts-test-agent", version: "1.0.0" });
const transport = new StreamableHTTPClientTransport(new URL(url), {
  requestInit: { headers: { Authorization: `Bearer ${token}` } },
});
await client.connect(transport);
out("connected", { server: client.getServerVersion(), capabilities: client.getServerCapabilities() });

const resources = [];
let cursor;
do {
  const page = await client.listResources(cursor ? { cursor } : {});
  resources.push(...page.resources.map((r) => r.uri));
  cursor = page.nextCursor;
} while (cursor);
out("resources", resources);

const templates = await client.listResourceTemplates();
out("templates", templates.resourceTemplates.map((t) => t.uriTemplate));

const prp = await client.readResource({ uri: `devpilot://specs/${session}/prps/PRP-1.1` });
out("prp", { mimeType: prp.contents[0].mimeType, text: prp.contents[0].text });

const prompt = await client.getPrompt({ name: "implement_prp", arguments: { session, prp: "PRP-1.1" } });
out("prompt", prompt.messages[0].content.text);

const tools = await client.listTools();
out("tools", tools.tools.map((t) => ({ name: t.name, annotations: t.annotations })));

const read = await client.callTool({ name: "list_widgets", arguments: {} });
out("read", { isError: read.isError ?? false, text: text(read) });

const write = await client.callTool({ name: "resize_widget", arguments: { service: "checkout", desired_count: 5 } });
const pending = JSON.parse(text(write));
out("write", pending);

await lines.next(); // the test approved it through the API
const outcome = await client.callTool({ name: "get_confirmation", arguments: { confirmation_id: pending.confirmation_id } });
out("outcome", JSON.parse(text(outcome)));

await client.close();
process.exit(0);
