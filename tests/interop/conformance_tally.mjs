// Helper for conformance.sh: counts one suite run's checks. Prints "PASSED FAILED EXCUSED".
//   node conformance_tally.mjs LOG OUTDIR PKGDIR [--scored REQUIREMENTS.yaml] [--baseline EXPECTED.yml]
// PASSED/FAILED come from the run's `=== SUMMARY ===` lines (`✓ scenario: N passed, M failed`).
// EXCUSED = failed checks that do not count: scenarios outside the --requirements set (extension/pending,
// "Not scored" in the suite's words) and failures listed in the expected-failures baseline
// (`server: [scenario | scenario:check-id]`, the suite's own format; per-check entries are matched
// against OUTDIR/server-<scenario>-<time>/checks.json).
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';

const [log, outDir, pkgDir, ...rest] = process.argv.slice(2);
const opt = (n) => { const i = rest.indexOf(n); return i >= 0 ? rest[i + 1] : undefined; };
const YAML = createRequire(path.join(pkgDir, 'package.json'))('yaml');   // the suite's own yaml dependency
const readYaml = (f) => (f ? YAML.parse(fs.readFileSync(f, 'utf8')) ?? {} : {});

const scored = opt('--scored') ? new Set(readYaml(opt('--scored')).server ?? []) : null;
const baseline = (readYaml(opt('--baseline')).server ?? []).map(String);
const wholeScenario = new Set(baseline.filter((e) => !e.includes(':')));
const perCheck = baseline.filter((e) => e.includes(':'));

// Failing check ids of one scenario, from its checks.json (the dir name ends in an ISO timestamp).
function failingIds(scenario) {
  const dir = fs.existsSync(outDir) ? fs.readdirSync(outDir).find((d) => d.replace(/-\d{4}-\d{2}-\d{2}T[\d-]+Z$/, '') === `server-${scenario}`) : null;
  if (!dir) return [];
  return JSON.parse(fs.readFileSync(path.join(outDir, dir, 'checks.json'), 'utf8')).filter((c) => c.status === 'FAILURE').map((c) => c.id);
}

let passed = 0, failed = 0, excused = 0;
const text = fs.existsSync(log) ? fs.readFileSync(log, 'utf8') : '';
const summary = text.split('=== SUMMARY ===')[1] ?? '';
for (const m of summary.matchAll(/^[✓✗] (\S+): (\d+) passed, (\d+) failed$/gm)) {
  const scenario = m[1], p = Number(m[2]), f = Number(m[3]);
  passed += p;
  if (!f) continue;
  if ((scored && !scored.has(scenario)) || wholeScenario.has(scenario)) { excused += f; continue; }
  const expectedIds = new Set(perCheck.filter((e) => e.startsWith(`${scenario}:`)).map((e) => e.slice(scenario.length + 1)));
  const ex = expectedIds.size ? failingIds(scenario).filter((id) => expectedIds.has(id)).length : 0;
  excused += Math.min(ex, f);
  failed += f - Math.min(ex, f);
}
console.log(`${passed} ${failed} ${excused}`);
