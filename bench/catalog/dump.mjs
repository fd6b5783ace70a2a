// Lists the tools of the nine MCP servers of the search-mode benchmark (issue 60) and writes
// bench/catalog/tools.json: { "<key>": [tool definitions exactly as the server listed them] }.
// Each server is started over stdio by the official TypeScript SDK client, with dummy tokens where it
// needs one to start (no call reaches any service: only initialize and tools/list are sent).
//   bench/catalog/install.sh && node bench/catalog/dump.mjs [--out FILE]
// The commands mirror bench/catalog/teamgate.toml. Prints tools and bytes per server.
import { existsSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '../..');
const cache = path.join(root, '.cache/catalog');
const sdkDir = process.env.TS_SDK_DIR ?? path.join(cache, 'sdk/node_modules/@modelcontextprotocol/sdk');
const load = (p) => import(pathToFileURL(path.join(sdkDir, 'dist/esm', p)).href);
const { Client } = await load('client/index.js');
const { StdioClientTransport } = await load('client/stdio.js');

const args = process.argv.slice(2);
const outIdx = args.indexOf('--out');
const out = outIdx >= 0 ? path.resolve(args[outIdx + 1]) : path.join(here, 'tools.json');

const pkg = (key, name, bin) => path.join(cache, key, 'node_modules', name, bin);
const fsRoot = path.join(cache, 'fs-root');
const kubeconfig = path.join(cache, 'kubeconfig');
for (const f of [sdkDir, fsRoot, kubeconfig]) {
  if (!existsSync(f)) { console.error(`${f} is missing: run bench/catalog/install.sh first`); process.exit(2); }
}

// key: teamgate upstream name (tools are offered as `<key>_<tool>`).
const SERVERS = {
  github: { script: pkg('github', '@modelcontextprotocol/server-github', 'dist/index.js'),
            env: { GITHUB_PERSONAL_ACCESS_TOKEN: 'dummy' } },
  gitlab: { script: pkg('gitlab', '@modelcontextprotocol/server-gitlab', 'dist/index.js'),
            env: { GITLAB_PERSONAL_ACCESS_TOKEN: 'dummy', GITLAB_API_URL: 'https://gitlab.com/api/v4' } },
  fs: { script: pkg('fs', '@modelcontextprotocol/server-filesystem', 'dist/index.js'), args: [fsRoot] },
  memory: { script: pkg('memory', '@modelcontextprotocol/server-memory', 'dist/index.js'),
            env: { MEMORY_FILE_PATH: path.join(cache, 'memory.jsonl') } },
  slack: { script: pkg('slack', '@modelcontextprotocol/server-slack', 'dist/index.js'),
           env: { SLACK_BOT_TOKEN: 'xoxb-dummy', SLACK_TEAM_ID: 'T00000000' } },
  notion: { script: pkg('notion', '@notionhq/notion-mcp-server', 'bin/cli.mjs'), env: { NOTION_TOKEN: 'dummy' } },
  k8s: { script: pkg('k8s', 'mcp-server-kubernetes', 'dist/index.js'),
         env: { KUBECONFIG: kubeconfig } },
  playwright: { script: pkg('playwright', '@playwright/mcp', 'cli.js'), args: ['--headless', '--isolated'] },
  everything: { script: pkg('everything', '@modelcontextprotocol/server-everything', 'dist/index.js'), args: ['stdio'] },
};

const only = args.filter((a, i) => !a.startsWith('--') && args[i - 1] !== '--out');
const result = {};
let failed = 0;
for (const [key, s] of Object.entries(SERVERS)) {
  if (only.length && !only.includes(key)) continue;
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [s.script, ...(s.args ?? [])],
    // Like teamgate: a cleared environment but PATH (and HOME, which some servers read) and the named ones.
    env: { PATH: process.env.PATH, HOME: process.env.HOME ?? '/tmp', ...(s.env ?? {}) },
    cwd: path.join(cache, key),
    stderr: 'pipe',
  });
  let stderr = '';
  transport.stderr?.on('data', (d) => { stderr += d; });
  // The capabilities teamgate declares toward upstreams (src/upstream/client.rs): the everything
  // server lists four more tools to a client that can answer elicitation, sampling and roots.
  // No handler is set, so a request the server sends is refused, as teamgate refuses one outside a call.
  const client = new Client({ name: 'teamgate-catalog-dump', version: '1.0.0' },
    { capabilities: { elicitation: { form: {}, url: {} }, sampling: {}, roots: {} } });
  try {
    await client.connect(transport, { timeout: 60000 });
    const tools = [];
    let cursor;
    do {
      const page = await client.listTools(cursor ? { cursor } : {}, { timeout: 60000 });
      tools.push(...page.tools);
      cursor = page.nextCursor;
    } while (cursor);
    result[key] = tools;
    const info = client.getServerVersion();
    console.log(`${key.padEnd(11)} ${String(tools.length).padStart(3)} tools ${String(Buffer.byteLength(JSON.stringify(tools))).padStart(7)} bytes  (${info?.name} ${info?.version})`);
  } catch (e) {
    failed++;
    console.log(`${key.padEnd(11)} FAILED: ${(e?.message ?? String(e)).split('\n')[0]}`);
    if (stderr) console.log(stderr.split('\n').slice(-15).map((l) => `  | ${l}`).join('\n'));
  } finally {
    await client.close().catch(() => {});
  }
}
const all = Object.values(result).flat();
console.log(`total       ${String(all.length).padStart(3)} tools ${String(Buffer.byteLength(JSON.stringify(all))).padStart(7)} bytes`);
if (failed) { console.error(`${failed} server(s) failed; ${out} not written`); process.exit(1); }
// One tool a line: readable diffs when a version changes, and the bytes stay near the listed ones.
const body = Object.entries(result)
  .map(([key, tools]) => ` ${JSON.stringify(key)}: [\n${tools.map((t) => `  ${JSON.stringify(t)}`).join(',\n')}\n ]`)
  .join(',\n');
writeFileSync(out, `{\n${body}\n}\n`);
console.log(`wrote ${path.relative(process.cwd(), out) || out}`);
