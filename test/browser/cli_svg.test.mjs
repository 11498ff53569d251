// SPDX-License-Identifier: MIT
// The flame graph as a user gets it: `wallprof --flame-graph -- cpu_split` records a real
// program through the real CLI, and the SVG it prints is opened in real headless Debian
// chromium (playwright-core): frames render, search finds the hot leaf with the share the
// folded report gives it, clicking a frame zooms, reset restores; per-thread roots appear
// with --per-thread. Run by `meson test flame-cli-browser` (WALLPROF and CPU_SPLIT set).
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
const WALLPROF = process.env.WALLPROF;
const TARGET = process.env.CPU_SPLIT;
const DEPS = 'run ./scripts/deps (it installs Debian chromium and runs npm ci --prefix test/browser)';
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'wp-cli-svg-'));

let browser = null;
after(async () => {
	if (browser) await browser.close();
	fs.rmSync(dir, { recursive: true, force: true });
});

async function open(file) {
	if (!fs.existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: ${DEPS}`);
	if (!browser) {
		const { chromium } = await import('playwright-core').catch((e) => {
			throw new Error(`playwright-core is not installed: ${DEPS} (${e.message})`);
		});
		browser = await chromium.launch({
			executablePath: CHROMIUM, timeout: 60000,
			args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
				'--disable-background-networking', '--disable-component-update', '--disable-sync'],
		});
	}
	const page = await browser.newPage({ viewport: { width: 1300, height: 900 } });
	const errors = [];
	page.on('pageerror', (e) => errors.push(String(e)));
	await page.goto(pathToFileURL(file).href);
	await page.waitForFunction(() => window.wpFlame !== undefined, null, { timeout: 30000 });
	return { page, errors };
}

// Share of samples whose stack contains `fn`, from the CLI's own folded report.
function foldedShare(prof, fn) {
	const out = execFileSync(WALLPROF, ['--report', prof, '--format=folded'], { encoding: 'utf8' });
	let all = 0, hit = 0;
	for (const line of out.split('\n')) {
		const sp = line.lastIndexOf(' ');
		if (sp < 0) continue;
		const n = Number(line.slice(sp + 1));
		all += n;
		if (line.slice(0, sp).split(';').includes(fn)) hit += n;
	}
	return (100 * hit) / all;
}

test('wallprof --flame-graph on a real program renders, searches and zooms in chromium', async () => {
	assert.ok(WALLPROF && TARGET, 'WALLPROF and CPU_SPLIT must be set (meson test flame-cli-browser)');
	const prof = path.join(dir, 'cs.prof'), svg = path.join(dir, 'cs.svg');
	const out = execFileSync(WALLPROF, ['--flame-graph', '--mode=cpu', '--hz=1000', '-q', '-o', prof,
		'--', TARGET, '1'], { encoding: 'utf8', maxBuffer: 64 << 20, stdio: ['ignore', 'pipe', 'ignore'] });
	fs.writeFileSync(svg, out);
	assert.match(out.slice(0, 200), /<svg|<\?xml/, 'the flame graph is SVG on standard output');

	const { page, errors } = await open(svg);
	const frames = await page.evaluate(() => window.wpFlame.frames().length);
	assert.ok(frames > 5, `frames are drawn (${frames})`);
	const titles = await page.evaluate(() => Array.from(document.querySelectorAll('title'))
		.map((t) => t.textContent).join('\n'));
	for (const fn of ['main', 'work_a', 'leaf_mul', 'hash_loop', 'lib_leaf_mul'])
		assert.ok(titles.includes(fn), `${fn} is in the graph`);

	const expected = foldedShare(prof, 'leaf_mul');
	const matched = await page.evaluate(() => window.wpFlame.search('^leaf_mul$'));
	assert.ok(Math.abs(matched - expected) < 0.6,
		`search shows leaf_mul's share of samples (${matched}% vs folded ${expected.toFixed(2)}%)`);

	await page.evaluate(() => window.wpFlame.zoom('work_a'));
	assert.notEqual(await page.evaluate(() => window.wpFlame.zoomed()), null, 'zooming into work_a');
	await page.evaluate(() => window.wpFlame.reset());
	assert.equal(await page.evaluate(() => window.wpFlame.zoomed()), null, 'reset undoes the zoom');
	await page.screenshot({ path: path.join(process.env.FLAME_SCREENSHOT_DIR || dir, 'cli-flame.png') });
	assert.deepEqual(errors, [], 'no script errors');
	await page.close();
});

test('--per-thread gives each thread a root', async () => {
	const prof = path.join(dir, 'cs.prof'), svg = path.join(dir, 'pt.svg');
	execFileSync(WALLPROF, ['--report', prof, '--format=svg', '--per-thread', '--report-output', svg]);
	const { page } = await open(svg);
	const titles = await page.evaluate(() => Array.from(document.querySelectorAll('title'))
		.map((t) => t.textContent).join('\n'));
	assert.match(titles, /\[cpu_split tid=\d+\]/, 'a [name tid=N] root frame');
	await page.close();
});

// Hot/cold (issue 13): a wall-mode graph of test/targets/waits, where lockers wait for big_lock
// held by `holder` computing in compute_holding_lock(): running frames are warm, waiting ones
// cool, each lock wait ends with [wait lock big_lock], then [held by holder tid=N] and the
// holder's stack above it (classes wait, held, holder); zooming keeps those classes.
test('wall mode: hot/cold frames, the wait leaf and the holder above [held by]', async () => {
	const WAITS = process.env.WAITS;
	assert.ok(WAITS, 'WAITS must be set (meson test flame-cli-browser)');
	const prof = path.join(dir, 'w.prof'), svg = path.join(dir, 'w.svg');
	execFileSync(WALLPROF, ['-q', '--hz=200', '-o', prof, '--', WAITS, '1'],
		{ stdio: ['ignore', 'ignore', 'ignore'] });
	execFileSync(WALLPROF, ['--report', prof, '--format=svg', '--report-output', svg]);
	const { page, errors } = await open(svg);
	const frames = await page.evaluate(() => window.wpFlame.frames());
	const states = new Set(frames.map((f) => f.state));
	for (const st of ['warm', 'cool', 'wait', 'held', 'holder'])
		assert.ok(states.has(st), `frames of class ${st} (${[...states]})`);
	const held = frames.filter((f) => /^\[held by holder tid=\d+\]$/.test(f.name));
	assert.ok(held.length > 0 && held.every((f) => f.state === 'held'), '[held by holder tid=N] frames');
	const lockWait = frames.filter((f) => f.name === '[wait lock big_lock]');
	assert.ok(lockWait.length > 0 && lockWait.every((f) => f.state === 'wait'), 'the wait leaf');
	// the holder's function sits above a [held by] frame, inside its span
	const above = frames.filter((f) => f.name === 'compute_holding_lock' && f.state === 'holder' &&
		held.some((h) => f.depth > h.depth && f.start >= h.start && f.start + f.samples <= h.start + h.samples));
	assert.ok(above.length > 0, 'compute_holding_lock in the holder stack above [held by]');
	assert.ok(frames.some((f) => f.name === 'locker_fn' && f.state === 'cool'), 'the waiters\' frames are cool');
	assert.ok(frames.some((f) => f.name === 'holder_fn' && f.state === 'warm'), 'the holder running is warm');
	await page.evaluate(() => window.wpFlame.zoom('[wait lock big_lock]'));
	const cls = await page.evaluate(() => Array.from(document.querySelectorAll('#wp-frames g'))
		.filter((g) => !g.classList.contains('hide')).map((g) => g.getAttribute('class')));
	assert.ok(cls.some((c) => c === 'f holder') && cls.some((c) => c === 'f cool dim'),
		`zoomed: the holder's frames keep their class, the waiter's are dimmed (${[...new Set(cls)]})`);
	assert.deepEqual(errors, [], 'no script errors');
	await page.close();
});
