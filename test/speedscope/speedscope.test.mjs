// SPDX-License-Identifier: MIT
// --format=speedscope, checked by the real consumer: speedscope's own JSON schema (shipped in
// its npm package as dist/release/file-format-schema.json, validated with ajv) and its
// offline viewer (dist/release/index.html, the page `npx speedscope FILE` opens) in headless
// Debian chromium driven by playwright-core, which never downloads a browser here.
//
// The profiled program is test/targets/export_threads.c --phases --weird-name: exp-main
// (blocked in join), exp-alpha (mix inlined in alpha_hot), exp-beta (beta_hot for the first
// 75% of the run, then gamma_hot) and a sleeper whose name holds a quote, a backslash, a tab,
// a control byte, an invalid UTF-8 byte and an "é". Its stacks are compared with the folded
// report's with --waits: a waiting sample ends with its [wait KIND OBJECT] frame.
//
// The wait frames (issue 13) on test/targets/waits.c (lockers blocked on big_lock behind a
// holder thread, a reader on a pipe) and test/targets/wait_split.c (one stack, two sleep
// objects, 1:3 in the target's own time): every waiting sample of those threads ends with the
// right [wait ...] frame, the lockers' with [held by holder tid=N] after it, the napper's time
// splits over its two objects as its samples do, and speedscope's time-order view shows
// [held by ...] as the deepest frame of a locker's timeline. A share that waited for a CPU
// ends with [wait cpu runqueue], as in folded --waits; with --wait-leaves=on the stacks are
// folded --waits --wait-leaves=on's (the leaf once).
//
// Run by `meson test speedscope`, which sets WP_BUILD and EXPORT_TARGET; the screenshots go
// to SPEEDSCOPE_SCREENSHOT_DIR (default: the temporary directory). Missing chromium, go or
// node_modules is a failure: ./scripts/deps installs them (npm ci --prefix test/speedscope).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, '..', '..');
const BUILD = path.resolve(process.env.WP_BUILD || path.join(ROOT, 'build'));
const WALLPROF = path.join(BUILD, 'src', 'cli', 'wallprof');
const TARGET = process.env.EXPORT_TARGET || path.join(BUILD, 'test', 'export_target');
const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
const SHOTS = process.env.SPEEDSCOPE_SCREENSHOT_DIR || os.tmpdir();
const DEPS = 'run ./scripts/deps (it installs Debian chromium and runs npm ci --prefix test/speedscope)';
const SCHEMA_URL = 'https://www.speedscope.app/file-format-schema.json';
const WEIRD = 'w"\\\t\u0001\ufffd\u00e9'; // the sleeper's name w"\<TAB><01><ff>é, decoded
const SECONDS = 1.5;
const BETA_SHARE = 75;

const require = createRequire(path.join(HERE, 'package.json'));
function dep(name) {
	try {
		return require(name);
	} catch (e) {
		throw new Error(`${name} is not installed in test/speedscope/node_modules: ${DEPS} (${e.message})`);
	}
}
function releaseDir() {
	let pkg;
	try {
		pkg = require.resolve('speedscope/package.json');
	} catch (e) {
		throw new Error(`speedscope is not installed in test/speedscope/node_modules: ${DEPS}`);
	}
	return path.join(path.dirname(pkg), 'dist', 'release');
}

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'wp-speedscope-'));
after(() => {
	if (!process.env.WP_KEEP_TMP) fs.rmSync(tmp, { recursive: true, force: true });
});

function run(argv, opts = {}) {
	const env = { ...process.env };
	for (const k of Object.keys(env)) if (k.startsWith('WALLPROF_') || k === 'LD_PRELOAD') delete env[k];
	const r = spawnSync(argv[0], argv.slice(1), { env, timeout: 120000, maxBuffer: 1 << 28, ...opts });
	if (r.error) throw new Error(`${argv.join(' ')}: ${r.error.message}`);
	if (r.status !== 0)
		throw new Error(`${argv.join(' ')} exited ${r.status ?? r.signal}:\n${String(r.stderr).slice(-2000)}`);
	return r;
}

// ---- the profile file, read independently of the CLI (docs/profile-format.md) ----
function readRecords(buf) {
	assert.equal(buf.subarray(0, 8).toString('latin1'), 'WALLPROF');
	const recs = [];
	let off = 16;
	while (off < buf.length) {
		const type = buf.readUInt32LE(off), len = Number(buf.readBigUInt64LE(off + 8));
		recs.push({ type, start: off, end: off + 16 + len, payload: buf.subarray(off + 16, off + 16 + len) });
		off += 16 + len;
	}
	return recs;
}
function rawStacks(buf) {
	const out = [];
	for (const r of readRecords(buf)) {
		if (r.type !== 4) continue;
		const p = r.payload;
		out.push({ id: p.readUInt32LE(0), tid: p.readUInt32LE(4), count: Number(p.readBigUInt64LE(16)),
			   weight: Number(p.readBigUInt64LE(24)) });
	}
	return out;
}
function rawMeta(buf) {
	const meta = {};
	for (const r of readRecords(buf))
		if (r.type === 1)
			for (const line of r.payload.toString('utf8').split('\n')) {
				const i = line.indexOf('=');
				if (i > 0) meta[line.slice(0, i)] = line.slice(i + 1);
			}
	return meta;
}
// The same file without its TIMELINE records: the exporter must fall back to stack counts.
function withoutTimeline(buf) {
	const parts = [buf.subarray(0, 16)];
	for (const r of readRecords(buf)) if (r.type !== 5) parts.push(buf.subarray(r.start, r.end));
	return Buffer.concat(parts);
}

// ---- the recording ----
const F = {};
before(() => {
	for (const [p, what] of [[WALLPROF, 'the wallprof CLI'], [TARGET, 'export_target']])
		if (!fs.existsSync(p)) throw new Error(`${what} (${p}) is missing: build it (meson compile)`);
	F.prof = path.join(tmp, 'x.prof');
	// Record with -f speedscope: the record-time path writes the JSON on stdout. On a loaded
	// machine the agent may leave a starved thread unsampled for a while; the time-order checks
	// need both of exp-beta's phases sampled, so try again (up to 3 runs) when one is missing.
	for (let attempt = 1; attempt <= 3; attempt++) {
		const rec = run([WALLPROF, '--mode=wall', '--hz=1000', '-q', '-o', F.prof, '-f', 'speedscope', '--',
				 TARGET, `--seconds=${SECONDS}`, `--beta-share=${BETA_SHARE}`, '--phases', '--weird-name']);
		F.recordStdout = rec.stdout;
		// the model's one rule: a share that waited for a CPU ends with [wait cpu runqueue] in
		// every export, folded --waits and speedscope alike
		F.folded = run([WALLPROF, '--report', F.prof, '--format=folded', '--per-thread', '--waits']).stdout.toString('utf8');
		const beta = /\[exp-beta tid=\d+\];[^\n]*;beta_hot (\d+)\n/.exec(F.folded);
		const gamma = /\[exp-beta tid=\d+\];[^\n]*;gamma_hot (\d+)\n/.exec(F.folded);
		if (beta && gamma && Number(beta[1]) >= 20 && Number(gamma[1]) >= 20) break;
		console.log(`# run ${attempt}: exp-beta's phases were not both sampled (the machine is busy?)${attempt < 3 ? '; recording again' : ''}`);
	}
	F.text = run([WALLPROF, '--report', F.prof, '--format=speedscope']).stdout.toString('utf8');
	F.json = JSON.parse(F.text);
	F.raw = fs.readFileSync(F.prof);
	F.meta = rawMeta(F.raw);
	F.stacks = rawStacks(F.raw);
	F.noTl = path.join(tmp, 'no-timeline.prof');
	fs.writeFileSync(F.noTl, withoutTimeline(F.raw));
	F.noTlText = run([WALLPROF, '--report', F.noTl, '--format=speedscope']).stdout.toString('utf8');
	F.noTlJson = JSON.parse(F.noTlText);
});

// folded --per-thread -> Map tid -> Map "a;b;c" -> count
function foldedByTid(text) {
	const m = new Map();
	for (const line of text.split('\n')) {
		if (!line) continue;
		const sp = line.lastIndexOf(' ');
		const frames = line.slice(0, sp).split(';');
		const tid = Number(/ tid=(\d+)\]$/.exec(frames[0])[1]);
		if (!m.has(tid)) m.set(tid, new Map());
		const key = frames.slice(1).join(';');
		m.get(tid).set(key, (m.get(tid).get(key) || 0) + Number(line.slice(sp + 1)));
	}
	return m;
}
function tidOf(profile) {
	const m = / \(tid (\d+)\)( \[no timeline[^\]]*\])?$/.exec(profile.name);
	assert.ok(m, `profile name ${JSON.stringify(profile.name)} ends with (tid N)`);
	return Number(m[1]);
}
function names(doc, sample) {
	return sample.map(i => doc.shared.frames[i].name);
}
function leafOf(doc, sample) {
	return sample.length ? doc.shared.frames[sample[sample.length - 1]].name : null;
}

function validator() {
	const Ajv = dep('ajv');
	const schemaPath = path.join(releaseDir(), 'file-format-schema.json');
	assert.ok(fs.existsSync(schemaPath), `speedscope's package ships ${schemaPath}`);
	const ajv = new (Ajv.default || Ajv)({ allErrors: true, strict: false });
	return ajv.compile(JSON.parse(fs.readFileSync(schemaPath, 'utf8')));
}

test('the JSON validates against the schema in speedscope\'s npm package', () => {
	const validate = validator();
	const ok = validate(F.json);
	assert.ok(ok, `schema errors: ${JSON.stringify(validate.errors, null, 1)}`);
	assert.equal(F.json.$schema, SCHEMA_URL);
	assert.ok(validate(F.noTlJson), `fallback: ${JSON.stringify(validate.errors, null, 1)}`);
	// the validator is live: a sampled profile without weights is rejected
	const broken = structuredClone(F.json);
	delete broken.profiles[0].weights;
	assert.equal(validate(broken), false);
	// the record-time -f speedscope output is the same document
	assert.equal(F.recordStdout.toString('utf8'), F.text);
});

test('one sampled profile per thread, named "NAME (tid N)", strings escaped', () => {
	const doc = F.json;
	const folded = foldedByTid(F.folded);
	const tids = doc.profiles.map(tidOf);
	assert.deepEqual([...tids].sort(), [...folded.keys()].sort(), 'a profile for every thread with samples');
	const byName = new Map(doc.profiles.map(p => [p.name.replace(/ \(tid \d+\)$/, ''), p]));
	for (const n of ['exp-main', 'exp-alpha', 'exp-beta', WEIRD])
		assert.ok(byName.has(n), `a profile for ${JSON.stringify(n)}: ${JSON.stringify([...byName.keys()])}`);
	// the raw text escapes the quote, backslash, tab and control byte; no raw control bytes
	assert.ok(F.text.includes('"w\\"\\\\\\t\\u0001\ufffd\u00e9 (tid '), 'the weird name, escaped');
	assert.ok(!/[\u0000-\u0009\u000b-\u001f]/.test(F.text), 'no raw control characters');
	for (const p of doc.profiles) {
		assert.equal(p.type, 'sampled');
		assert.equal(p.unit, 'nanoseconds');
		assert.equal(p.samples.length, p.weights.length);
		assert.ok(p.weights.every(w => Number.isInteger(w) && w > 0), 'positive integer weights');
		assert.ok(p.samples.every(s => s.every(i => Number.isInteger(i) && i >= 0 && i < doc.shared.frames.length)),
			  'frame indices in range');
		assert.equal(p.startValue, 0);
		assert.equal(p.endValue, p.weights.reduce((a, b) => a + b, 0), 'endValue = the sum of the weights');
	}
	assert.ok(doc.activeProfileIndex >= 0 && doc.activeProfileIndex < doc.profiles.length);
	assert.match(doc.exporter, /^wallprof /);
	assert.ok(!/no complete timeline/.test(doc.exporter), `complete timeline: ${doc.exporter}`);
	const alpha = doc.shared.frames.find(f => f.name === 'alpha_hot');
	assert.ok(alpha && /export_threads\.c$/.test(alpha.file) && alpha.line > 0, `alpha_hot has file and line: ${JSON.stringify(alpha)}`);
});

test('each thread\'s stacks are the folded report\'s, root first, with similar shares', () => {
	const doc = F.json;
	const folded = foldedByTid(F.folded);
	const duration = Number(F.meta.duration_ns);
	for (const p of doc.profiles) {
		const tid = tidOf(p);
		const want = folded.get(tid);
		const got = new Map();
		let busy = 0;
		p.samples.forEach((s, i) => {
			if (!s.length) return;
			const key = names(doc, s).join(';');
			got.set(key, (got.get(key) || 0) + p.weights[i]);
			busy += p.weights[i];
		});
		// The timeline names a stack, not how its samples split between running and waiting
		// for a CPU: a stack's timeline samples are dealt out between the two in proportion
		// (deal_wait), so a split of one or two samples may land wholly on one side (seen at
		// load ~10: 'now;clock_gettime' 1 sample, all dealt to its runqueue twin).
		const few = [...want.keys()].filter(k => !got.has(k) && want.get(k) <= 2 &&
			(want.has(k + ';[wait cpu runqueue]') || want.has(k.replace(/;\[wait cpu runqueue\]$/, ''))));
		assert.deepEqual([...got.keys()].sort(), [...want.keys()].filter(k => !few.includes(k)).sort(),
				 `${p.name}: the same distinct stacks`);
		const count = [...want.values()].reduce((a, b) => a + b, 0);
		for (const [key, c] of want) {
			if (few.includes(key)) continue;
			const share = c / count, tshare = got.get(key) / busy;
			// time weights follow the gaps between samples, which a busy machine makes uneven:
			// a loose bound, that still catches samples given to the wrong stack
			assert.ok(Math.abs(share - tshare) < 0.25,
				  `${p.name}: ${key} has ${(100 * tshare).toFixed(1)}% of the time, ${(100 * share).toFixed(1)}% of the samples`);
		}
		// every thread spans the run: idle before/after, endValue = the run's duration
		assert.ok(Math.abs(p.endValue - duration) <= 2e6, `${p.name}: endValue ${p.endValue} ~ duration ${duration}`);
	}
});

// The function a sample ran in: its leaf, or the leaf's caller for a share that waited for a
// CPU ([wait cpu runqueue] after the stack: the thread was there, runnable).
function ranIn(doc, sample) {
	const leaf = leafOf(doc, sample);
	return leaf && leaf.startsWith('[wait cpu ') ? doc.shared.frames[sample[sample.length - 2]]?.name : leaf;
}
// The runs of samples of a profile in one function (ranIn), in time order: [{ t, w, leaf }].
function timed(doc, profile) {
	let t = 0;
	const runs = [];
	profile.samples.forEach((s, i) => {
		const leaf = ranIn(doc, s), last = runs[runs.length - 1];
		if (last && last.leaf === leaf)
			last.w += profile.weights[i];
		else
			runs.push({ t, w: profile.weights[i], leaf });
		t += profile.weights[i];
	});
	return runs;
}

test('samples are in time order, at their times (exp-beta: beta_hot, then gamma_hot)', () => {
	const doc = F.json;
	const beta = doc.profiles.find(p => p.name.startsWith('exp-beta (tid'));
	assert.ok(beta);
	const ev = timed(doc, beta);
	const betas = ev.filter(e => e.leaf === 'beta_hot'), gammas = ev.filter(e => e.leaf === 'gamma_hot');
	assert.ok(betas.length && gammas.length, 'both phases sampled');
	const lastBeta = betas[betas.length - 1], firstGamma = gammas[0];
	assert.ok(lastBeta.t + lastBeta.w <= firstGamma.t,
		  `every beta_hot sample (the last until ${lastBeta.t + lastBeta.w} ns) precedes every gamma_hot one (from ${firstGamma.t} ns)`);
	// the program switches at BETA_SHARE% of its run (it starts a few ms after the agent)
	const sw = SECONDS * 1e9 * BETA_SHARE / 100, tol = 0.1e9;
	assert.ok(lastBeta.t <= sw + tol, `the last beta_hot sample starts at ${(lastBeta.t / 1e6).toFixed(1)} ms, before the switch at ~${sw / 1e6} ms`);
	assert.ok(firstGamma.t >= sw - tol, `the first gamma_hot sample starts at ${(firstGamma.t / 1e6).toFixed(1)} ms, after the switch at ~${sw / 1e6} ms`);
});

test('without a timeline: stack totals, said in the names and the exporter field', () => {
	const doc = F.noTlJson;
	const n = doc.profiles.length;
	assert.equal(n, F.json.profiles.length);
	assert.match(doc.exporter, new RegExp(`no complete timeline for ${n} of ${n} threads`));
	const perTid = new Map();
	for (const s of F.stacks) perTid.set(s.tid, (perTid.get(s.tid) || 0) + s.weight);
	for (const p of doc.profiles) {
		assert.match(p.name, /\(tid \d+\) \[no timeline: grouped by stack, not in time order\]$/);
		assert.ok(p.samples.every(s => s.length > 0), 'no idle samples');
		const sum = p.weights.reduce((a, b) => a + b, 0);
		assert.equal(sum, perTid.get(tidOf(p)), `${p.name}: weights = the thread's weight_ns (count x interval)`);
	}
});

test('--thread keeps one thread', () => {
	const doc = JSON.parse(run([WALLPROF, '--report', F.prof, '--format=speedscope', '--thread=exp-alpha']).stdout.toString('utf8'));
	assert.equal(doc.profiles.length, 1);
	assert.match(doc.profiles[0].name, /^exp-alpha \(tid \d+\)$/);
	assert.equal(doc.activeProfileIndex, 0);
});

// ---- speedscope's viewer in chromium ----
function serve(files) {
	const rel = releaseDir();
	const server = http.createServer((req, res) => {
		const u = new URL(req.url, 'http://localhost');
		let file = files[u.pathname];
		if (!file) {
			const p = path.normalize(path.join(rel, decodeURIComponent(u.pathname)));
			if (p.startsWith(rel + path.sep) && fs.existsSync(p) && fs.statSync(p).isFile()) file = p;
		}
		if (!file) {
			res.writeHead(404);
			res.end();
			return;
		}
		const type = { '.html': 'text/html', '.js': 'text/javascript', '.css': 'text/css', '.json': 'application/json',
			       '.wasm': 'application/wasm', '.png': 'image/png', '.woff2': 'font/woff2' }[path.extname(file)];
		res.writeHead(200, type ? { 'content-type': type } : {});
		res.end(fs.readFileSync(file));
	});
	return new Promise(resolve => server.listen(0, '127.0.0.1', () => resolve(server)));
}

async function launch() {
	if (!fs.existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: ${DEPS}`);
	const { chromium } = dep('playwright-core');
	return chromium.launch({
		executablePath: CHROMIUM,
		timeout: 60000,
		args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
			'--disable-background-networking', '--disable-component-update', '--disable-sync'],
	});
}

// Opens speedscope on /profile.json. Returns { page, problems } where problems collects page
// errors, console errors and any request that left the local server.
async function open(browser, base) {
	const page = await browser.newPage({ viewport: { width: 1400, height: 800 } });
	const problems = [];
	page.on('pageerror', e => problems.push(`page error: ${e.message}`));
	page.on('console', m => { if (m.type() === 'error') problems.push(`console error: ${m.text()}`); });
	page.on('dialog', d => { problems.push(`dialog: ${d.message()}`); d.dismiss(); });
	await page.route('**/*', route => {
		const u = route.request().url();
		if (u.startsWith(base + '/')) return route.continue();
		problems.push(`request outside the local server: ${u}`);
		return route.abort();
	});
	await page.goto(`${base}/index.html#profileURL=${encodeURIComponent(base + '/profile.json')}`);
	return { page, problems };
}

// The hover tooltip at (x, y): { name, file } or null.
async function tooltipAt(page, x, y) {
	await page.mouse.move(x, y);
	await page.waitForTimeout(60);
	const text = await page.evaluate(() => document.body.innerText);
	// the file line is missing for a frame without one (a wait frame)
	const m = /\n[\d.]+\s*(?:ns|µs|us|ms|s) \([<>]?[\d.]+%\) ([^\n]+)(?:\n([^\n]*))?\s*$/.exec(text);
	return m ? { name: m[1], file: m[2] ?? '' } : null;
}

// The deepest frame under x in the time-order flame chart (rows start below the minimap),
// a [wait cpu ...] sliver under a running function left out (ranIn).
async function leafAt(page, x) {
	let last = null, seen = false;
	for (let y = 130; y < 600; y += 10) {
		const t = await tooltipAt(page, x, y);
		if (t) {
			if (!t.name.startsWith('[wait cpu '))
				last = t;
			seen = true;
		} else if (seen) break;
	}
	return last;
}

const strip = s => s.replace(/[\s\u0000-\u001f\ufffd]/g, '');

test('speedscope\'s viewer loads it: profiles listed, frames shown in time order', { timeout: 180000 }, async () => {
	const browser = await launch();
	const server = await serve({ '/profile.json': path.join(tmp, 'x.json') });
	fs.writeFileSync(path.join(tmp, 'x.json'), F.text);
	const base = `http://127.0.0.1:${server.address().port}`;
	try {
		const { page, problems } = await open(browser, base);
		const doc = F.json, n = doc.profiles.length;
		const active = doc.profiles[doc.activeProfileIndex].name;
		// the toolbar names the active profile, "(k/n)"
		const title = page.getByText(`(${doc.activeProfileIndex + 1}/${n})`, { exact: true });
		await title.waitFor({ timeout: 30000 });
		let body = await page.evaluate(() => document.body.innerText);
		assert.ok(body.includes(active), `the toolbar shows ${active}`);
		assert.ok(!/Something went wrong|Unrecognized format|Failed to load/i.test(body), `no error shown:\n${body}`);

		// the profile selector lists every thread
		await title.click();
		await page.getByPlaceholder('Filter...').waitFor({ timeout: 10000 });
		body = await page.evaluate(() => document.body.innerText);
		for (const p of doc.profiles)
			assert.ok(strip(body).includes(strip(p.name)), `the selector lists ${JSON.stringify(p.name)}:\n${body}`);
		await page.screenshot({ path: path.join(SHOTS, 'speedscope-selector.png') });
		// pick exp-beta
		const beta = doc.profiles.findIndex(p => p.name.startsWith('exp-beta (tid'));
		await page.getByText(doc.profiles[beta].name, { exact: true }).click();
		await page.getByText(`(${beta + 1}/${n})`, { exact: true }).waitFor({ timeout: 10000 });
		await page.waitForTimeout(300);

		// time order: hovering the flame chart where the JSON has its longest beta_hot and
		// gamma_hot samples shows those frames; the tooltip names the source file
		const W = 1400, bp = doc.profiles[beta], ev = timed(doc, bp);
		const longest = leaf => ev.filter(e => e.leaf === leaf).sort((a, b) => b.w - a.w)[0];
		const xOf = e => Math.round(W * (e.t + e.w / 2) / bp.endValue);
		const lb = longest('beta_hot'), lg = longest('gamma_hot');
		assert.ok(lb.w > 0.02 * bp.endValue && lg.w > 0.02 * bp.endValue, 'wide enough to hover');
		const early = await leafAt(page, xOf(lb));
		const late = await leafAt(page, xOf(lg));
		assert.ok(xOf(lb) < xOf(lg));
		assert.equal(early?.name, 'beta_hot', `leaf at x=${xOf(lb)}: ${JSON.stringify(early)}`);
		assert.match(early.file, /export_threads\.c:\d+$/);
		assert.equal(late?.name, 'gamma_hot', `leaf at x=${xOf(lg)}: ${JSON.stringify(late)}`);
		await page.mouse.move(Math.round(W * 0.5), 100);
		await page.screenshot({ path: path.join(SHOTS, 'speedscope-beta-time-order.png') });

		// the sandwich view's table lists the functions
		await page.getByText('Sandwich').click();
		await page.waitForTimeout(500);
		body = await page.evaluate(() => document.body.innerText);
		for (const fn of ['beta_hot', 'gamma_hot', 'beta_loop', 'beta_thread'])
			assert.ok(body.includes(fn), `the sandwich table lists ${fn}`);
		await page.screenshot({ path: path.join(SHOTS, 'speedscope-beta-sandwich.png') });
		assert.deepEqual(problems, []);
		await page.close();

		// the fallback document loads too
		fs.writeFileSync(path.join(tmp, 'x.json'), F.noTlText);
		const second = await open(browser, base);
		await second.page.getByText(`(${F.noTlJson.activeProfileIndex + 1}/${n})`, { exact: true }).waitFor({ timeout: 30000 });
		body = await second.page.evaluate(() => document.body.innerText);
		assert.ok(body.includes('[no timeline: grouped by stack, not in time order]'), body);
		await second.page.screenshot({ path: path.join(SHOTS, 'speedscope-no-timeline.png') });
		assert.deepEqual(second.problems, []);
	} finally {
		await browser.close();
		server.close();
	}
});

// ---- wait frames (issue 13) ----
const WAITS = path.join(BUILD, 'test', 'targets', 'waits');
const SPLIT = path.join(BUILD, 'test', 'targets', 'wait_split');
function truthOf(file) {
	const t = {};
	for (const line of fs.readFileSync(file, 'utf8').split('\n')) {
		const i = line.indexOf(' ');
		if (i > 0) t[line.slice(0, i)] = line.slice(i + 1);
	}
	return t;
}
function recordWaits(target, name) {
	for (const p of [target]) if (!fs.existsSync(p)) throw new Error(`${p} is missing: build it (meson compile)`);
	const prof = path.join(tmp, `${name}.prof`), truth = path.join(tmp, `${name}.truth`);
	run([WALLPROF, '--mode=wall', '--hz=200', '-q', '-o', prof, '--', target, '1.5'],
	    { env: { ...process.env, WP_TRUTH: truth } });
	const text = run([WALLPROF, '--report', prof, '--single-file', '--format=speedscope']).stdout.toString('utf8');
	return { prof, truth: truthOf(truth), text, json: JSON.parse(text) };
}
// A profile's samples -> Map "last two frames" -> weight (idle samples left out).
function tails(doc, p) {
	const m = new Map();
	p.samples.forEach((s, i) => {
		if (!s.length) return;
		const key = names(doc, s).slice(-2).join(' | ');
		m.set(key, (m.get(key) || 0) + p.weights[i]);
	});
	return m;
}
const W = {};
before(() => {
	W.waits = recordWaits(WAITS, 'waits');
	W.split = recordWaits(SPLIT, 'split');
});

test('waiting samples end with [wait KIND OBJECT], a lock\'s with [held by NAME tid=N]', () => {
	const { json: doc, truth } = W.waits;
	assert.ok(validator()(doc), 'the document validates');
	const byName = new Map(doc.profiles.map(p => [p.name.replace(/ \(tid \d+\)$/, ''), p]));
	const held = `[held by holder tid=${truth['tid.holder']}]`;
	for (const n of ['locker-1', 'locker-2', 'locker-3']) {
		const t = tails(doc, byName.get(n));
		const total = [...t.values()].reduce((a, b) => a + b, 0);
		const good = t.get(`[wait lock big_lock] | ${held}`) || 0;
		assert.ok(total && good >= 0.9 * total, `${n}: ${good} of ${total} ns end with [wait lock big_lock], ${held}: ${JSON.stringify([...t])}`);
	}
	const reader = tails(doc, byName.get('reader'));
	const rt = [...reader.values()].reduce((a, b) => a + b, 0);
	const rk = [...reader.keys()].find(k => k.endsWith(`[wait io ${truth.pipe}]`) || k.includes(`[wait io ${truth.pipe} `));
	assert.ok(rk && reader.get(rk) >= 0.9 * rt, `reader ends with [wait io ${truth.pipe}]: ${JSON.stringify([...reader])}`);
	const holder = tails(doc, byName.get('holder'));
	assert.ok(![...holder.keys()].some(k => k.includes('[wait ') && !k.endsWith('[wait cpu runqueue]')), `the holder (running) has no wait frame but [wait cpu runqueue] (its share that waited for a CPU): ${JSON.stringify([...holder])}`);
	// (function names may repeat: one per module; a wait frame is one frame)
	const frames = doc.shared.frames.map(f => f.name).filter(n => /^\[(wait|held by) /.test(n));
	assert.ok(frames.length >= 10, `the wait frames are in shared.frames: ${frames}`);
	assert.equal(new Set(frames).size, frames.length, 'each wait frame once in shared.frames');
});

test('one stack waiting on two objects: both frames, in the proportion of their samples', () => {
	const { json: doc, prof } = W.split;
	const napper = doc.profiles.find(p => p.name.startsWith('napper (tid'));
	assert.ok(napper, 'a profile for the napper');
	const t = tails(doc, napper);
	const a = t.get('clock_nanosleep | [wait sleep 10ms]') || 0, b = t.get('clock_nanosleep | [wait sleep 30ms]') || 0;
	assert.ok(a && b, `both [wait sleep 10ms] and [wait sleep 30ms]: ${JSON.stringify([...t])}`);
	// the model's own split (folded --waits): the timeline names the stack, not the wait, so
	// the stack's samples are dealt out in these proportions. (That the split itself is the
	// target's truth is test_pprof_waits.py's check.)
	const folded = run([WALLPROF, '--report', prof, '--single-file', '--format=folded', '--waits', '--thread=napper']).stdout.toString('utf8');
	const count = obj => Number((new RegExp(`;\\[wait sleep ${obj}\\] (\\d+)$`, 'm').exec(folded) || [0, 0])[1]);
	const want = count('10ms') / (count('10ms') + count('30ms'));
	assert.ok(want > 0.1 && want < 0.5, `folded --waits splits the napper's stack: ${folded}`);
	assert.ok(Math.abs(a / (a + b) - want) < 0.05, `10ms has ${(100 * a / (a + b)).toFixed(1)}% of the napper's nap time in the timeline, ${(100 * want).toFixed(1)}% of its samples`);
	// without a timeline, the same split from the waits' own weights
	const noTl = path.join(tmp, 'split-no-timeline.prof');
	fs.writeFileSync(noTl, withoutTimeline(fs.readFileSync(prof)));
	const d2 = JSON.parse(run([WALLPROF, '--report', noTl, '--single-file', '--format=speedscope', '--thread=napper']).stdout.toString('utf8'));
	const t2 = tails(d2, d2.profiles[0]);
	const a2 = t2.get('clock_nanosleep | [wait sleep 10ms]') || 0, b2 = t2.get('clock_nanosleep | [wait sleep 30ms]') || 0;
	assert.ok(a2 && b2 && Math.abs(a2 / (a2 + b2) - want) < 0.05, `no timeline: ${JSON.stringify([...t2])}`);
});

// --wait-leaves=on: the model's stacks, as folded's: a wait leaf once, a wait for a CPU a frame
// after its running stack. Without a timeline, the same distinct stacks per thread; with one
// (the timeline names the profile's stack, dealt out over the stacks split off it), none that
// folded has not, and the lockers' time ends with their leaf and its holder.
test('--wait-leaves=on: each thread\'s stacks are folded --waits --wait-leaves=on\'s', () => {
	const { prof, truth } = W.waits;
	const want = foldedByTid(run([WALLPROF, '--report', prof, '--single-file', '--format=folded', '--per-thread', '--waits', '--wait-leaves=on']).stdout.toString('utf8'));
	const noTl = path.join(tmp, 'waits-no-timeline.prof');
	fs.writeFileSync(noTl, withoutTimeline(fs.readFileSync(prof)));
	for (const file of [prof, noTl]) {
		const doc = JSON.parse(run([WALLPROF, '--report', file, '--single-file', '--format=speedscope', '--wait-leaves=on']).stdout.toString('utf8'));
		assert.ok(validator()(doc), 'the document validates');
		for (const p of doc.profiles) {
			const got = new Set(p.samples.filter(x => x.length).map(x => names(doc, x).join(';')));
			// speedscope names a lock's holder ([held by ...]) without the holder's frames
			const w = [...new Set([...(want.get(tidOf(p)) || new Map()).keys()].map(k => k.replace(/(;\[held by [^\]]*\]);.*$/, '$1')))].sort();
			if (file === noTl)
				assert.deepEqual([...got].sort(), w, `${p.name}, no timeline: the same distinct stacks`);
			else
				assert.deepEqual([...got].filter(k => !w.includes(k)), [], `${p.name}: no stack folded has not`);
		}
		const held = `locker_fn | [wait lock big_lock] | [held by holder tid=${truth['tid.holder']}]`;
		const locker = doc.profiles.find(p => p.name.startsWith('locker-1 (tid'));
		const m = new Map();
		locker.samples.forEach((x, i) => {
			if (x.length) m.set(names(doc, x).slice(-3).join(' | '), (m.get(names(doc, x).slice(-3).join(' | ')) || 0) + locker.weights[i]);
		});
		const total = [...m.values()].reduce((a, b) => a + b, 0);
		assert.ok(total && (m.get(held) || 0) >= 0.9 * total, `locker-1 ends with ${held}: ${JSON.stringify([...m])}`);
	}
});

test('speedscope\'s viewer shows the wait frames at the bottom of a locker\'s timeline', { timeout: 180000 }, async () => {
	const browser = await launch();
	fs.writeFileSync(path.join(tmp, 'w.json'), W.waits.text);
	const server = await serve({ '/profile.json': path.join(tmp, 'w.json') });
	const base = `http://127.0.0.1:${server.address().port}`;
	try {
		const { page, problems } = await open(browser, base);
		const doc = W.waits.json, n = doc.profiles.length;
		const title = page.getByText(`(${doc.activeProfileIndex + 1}/${n})`, { exact: true });
		await title.waitFor({ timeout: 30000 });
		await title.click();
		await page.getByPlaceholder('Filter...').waitFor({ timeout: 10000 });
		const k = doc.profiles.findIndex(p => p.name.startsWith('locker-1 (tid'));
		await page.getByText(doc.profiles[k].name, { exact: true }).click();
		await page.getByText(`(${k + 1}/${n})`, { exact: true }).waitFor({ timeout: 10000 });
		await page.waitForTimeout(300);
		const leaf = await leafAt(page, 700);
		await page.screenshot({ path: path.join(SHOTS, 'speedscope-locker-waits.png') });
		assert.equal(leaf?.name, `[held by holder tid=${W.waits.truth['tid.holder']}]`, `deepest frame in the middle of locker-1's timeline: ${JSON.stringify(leaf)}`);
		assert.deepEqual(problems, []);
	} finally {
		await browser.close();
		server.close();
	}
});
