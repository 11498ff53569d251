// SPDX-License-Identifier: MIT
// Opens the flame graphs written by test/unit/flame_demo in real headless Debian chromium
// (through playwright-core, which never downloads a browser here) and drives them like a
// person would: hover, search, click to zoom, reset.
//
// Run by `meson test flame-browser`, which sets FLAME_SVG and FLAME_DIFF_SVG. Screenshots go
// to FLAME_SCREENSHOT_DIR (default /tmp). Missing chromium or node_modules is a failure:
// ./scripts/deps installs both.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
const SVG = process.env.FLAME_SVG;
const DIFF_SVG = process.env.FLAME_DIFF_SVG;
const SHOTS = process.env.FLAME_SCREENSHOT_DIR || '/tmp';
const DEPS = 'run ./scripts/deps (it installs Debian chromium and runs npm ci --prefix test/browser)';
const GW = 1180; // graph width of a 1200 px graph
const TOTAL = 1000;

let browserPromise = null;

async function launch() {
	if (!fs.existsSync(CHROMIUM))
		throw new Error(`${CHROMIUM} is missing: ${DEPS}`);
	let chromium;
	try {
		({ chromium } = await import('playwright-core'));
	} catch (e) {
		throw new Error(`playwright-core is not installed in test/browser/node_modules: ${DEPS} (${e.message})`);
	}
	return chromium.launch({
		executablePath: CHROMIUM,
		timeout: 60000,
		args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
			'--disable-background-networking', '--disable-component-update', '--disable-sync'],
	});
}

function browser() {
	if (!browserPromise) browserPromise = launch();
	return browserPromise;
}

after(async () => {
	if (browserPromise) {
		const b = await browserPromise.catch(() => null);
		if (b) await b.close();
	}
});

function svgPath(p, what) {
	if (!p || !fs.existsSync(p))
		throw new Error(`${what} does not name an SVG written by flame_demo (got ${p}); run the test with meson test flame-browser`);
	return p;
}

// A page showing `file` (with an optional query string); collects script errors and every
// request that is not for the file itself.
async function open(file, query = '') {
	const b = await browser();
	const page = await b.newPage({ viewport: { width: 1220, height: 640 } });
	page.errors = [];
	page.requests = [];
	page.on('pageerror', (e) => page.errors.push(String(e)));
	page.on('console', (m) => { if (m.type() === 'error') page.errors.push(m.text()); });
	page.on('request', (r) => { if (!r.url().startsWith('file:')) page.requests.push(r.url()); });
	await page.goto(pathToFileURL(file).href + query);
	await page.waitForFunction(() => window.wpFlame !== undefined, null, { timeout: 10000 });
	return page;
}

// Geometry and state of every frame, from the live DOM.
function frames(page) {
	return page.evaluate(() => [...document.querySelectorAll('#wp-frames > g.f')].map((g) => {
		const r = g.querySelector('rect');
		const t = g.querySelector('text');
		const bb = r.getBBox();
		const title = g.querySelector('title').textContent;
		return {
			id: g.id,
			name: title.slice(0, title.lastIndexOf(' (')),
			title,
			x: bb.x, y: bb.y, width: bb.width,
			shown: getComputedStyle(g).display !== 'none',
			dim: g.classList.contains('dim'),
			fill: getComputedStyle(r).fill,
			label: t.textContent,
			labelWidth: t.getComputedTextLength(),
		};
	}));
}

const byName = (fs_, name) => fs_.filter((f) => f.name === name);
const one = (fs_, name) => {
	const m = byName(fs_, name);
	assert.equal(m.length, 1, `one frame called ${name}`);
	return m[0];
};
const near = (a, b, msg, eps = 0.6) => assert.ok(Math.abs(a - b) <= eps, `${msg}: ${a} vs ${b}`);
const rgb = (s) => s.match(/\d+/g).map(Number);

async function centre(page, id) {
	const box = await page.locator(`#${id} rect`).boundingBox();
	assert.ok(box, `${id} is on screen`);
	return { x: box.x + box.width / 2, y: box.y + box.height / 2 };
}

test('renders every frame with a width proportional to its samples', async () => {
	const page = await open(svgPath(SVG, 'FLAME_SVG'));
	const fr = await frames(page);
	assert.equal(fr.length, 24, 'frames in the demo');
	for (const f of fr) {
		assert.ok(f.shown && f.width > 0, `${f.name} has a width`);
		// labels are clipped to the frame, with an ellipsis when shortened
		assert.ok(f.label === '' || f.labelWidth <= f.width - 5, `label of ${f.name} fits: ${f.labelWidth} in ${f.width}`);
		if (f.label && f.label !== f.name) assert.ok(f.label.endsWith('\u2026'), `clipped label ${f.label}`);
	}
	near(one(fr, 'all').width, GW, 'root spans the graph');
	near(one(fr, 'main').width, GW * 800 / TOTAL, 'main');
	near(one(fr, 'compute_outer').width, GW * 500 / TOTAL, 'compute_outer');
	near(one(fr, '[worker tid=4243]').width, GW * 200 / TOTAL, 'worker thread');
	// root at the bottom, children above their parent
	assert.ok(one(fr, 'all').y > one(fr, 'main').y, 'root is at the bottom');
	// the long C++ name survived escaping and got a clipped label
	const vec = one(fr, 'std::vector<Record, std::allocator<Record> >::push_back(Record const&)');
	assert.ok(vec.label.length < vec.name.length, 'long name is clipped');
	assert.ok(one(fr, 'main').label === 'main', 'wide frame shows its whole name');
	// colours: warm program frames, green/aqua library, blue-grey threads, grey unknown
	const [pr, pg, pb] = rgb(one(fr, 'main').fill);
	assert.ok(pr > 200 && pr > pb + 60, `program frame is warm: ${one(fr, 'main').fill}`);
	const [lr, lg] = rgb(one(fr, 'start_thread').fill);
	assert.ok(lg > lr + 40, `library frame is green/aqua: ${one(fr, 'start_thread').fill}`);
	const [tr, , tb] = rgb(one(fr, '[main tid=4242]').fill);
	assert.ok(tb > tr + 30, 'thread root is blue-grey');
	const [ur, ug, ub] = rgb(one(fr, '[unknown]').fill);
	assert.ok(ur === ug && ug === ub, 'unknown frame is grey');
	assert.deepEqual(page.errors, [], 'no script errors');
	assert.deepEqual(page.requests, [], 'no requests beyond the file');
	await page.screenshot({ path: path.join(SHOTS, 'flame-demo.png') });
	await page.close();
});

test('hovering a frame shows its details', async () => {
	const page = await open(svgPath(SVG, 'FLAME_SVG'));
	const hint = await page.textContent('#wp-details');
	const c = await centre(page, one(await frames(page), 'compute_outer').id);
	await page.mouse.move(c.x, c.y);
	assert.equal(await page.textContent('#wp-details'), 'compute_outer (500 samples, 50.00%)');
	const m = await centre(page, one(await frames(page), 'memchr').id);
	await page.mouse.move(m.x, m.y);
	assert.equal(await page.textContent('#wp-details'), 'memchr (50 samples, 5.00%)');
	await page.mouse.move(5, 5);
	assert.equal(await page.textContent('#wp-details'), hint, 'leaving restores the hint');
	assert.deepEqual(page.errors, []);
	await page.close();
});

test('search highlights matches and counts each sample once', async () => {
	const page = await open(svgPath(SVG, 'FLAME_SVG'));
	// compute_outer (500) contains compute_inner (400); the worker's compute_inner adds 150
	assert.equal(await page.evaluate(() => window.wpFlame.search('compute_')), 65);
	assert.match(await page.textContent('#wp-matched'), /^Matched: 65\.00%/);
	let fr = await frames(page);
	const hl = fr.filter((f) => f.fill === 'rgb(230, 0, 230)').map((f) => f.name).sort();
	assert.deepEqual(hl, ['compute_inner', 'compute_inner', 'compute_outer']);
	assert.notEqual(one(fr, 'main').fill, 'rgb(230, 0, 230)');
	assert.equal(await page.evaluate(() => window.wpFlame.matched()), 65);

	// the Search control prompts for a regex
	page.once('dialog', (d) => d.accept('^sqrt$'));
	await page.click('#wp-search');
	assert.match(await page.textContent('#wp-matched'), /^Matched: 45\.00%/);
	fr = await frames(page);
	assert.equal(fr.filter((f) => f.fill === 'rgb(230, 0, 230)').length, 2, 'both sqrt frames');
	assert.notEqual(byName(fr, 'compute_outer')[0].fill, 'rgb(230, 0, 230)', 'old matches cleared');

	// Clear restores the colours
	await page.click('#wp-clear');
	assert.equal(await page.textContent('#wp-matched'), '');
	fr = await frames(page);
	assert.equal(fr.filter((f) => f.fill === 'rgb(230, 0, 230)').length, 0);
	assert.equal(await page.evaluate(() => window.wpFlame.search('(')), null, 'bad regex');
	assert.match(await page.textContent('#wp-matched'), /Invalid/);
	assert.deepEqual(page.errors, []);
	await page.close();
});

test('?s=regex deep link searches on load', async () => {
	const page = await open(svgPath(SVG, 'FLAME_SVG'), '?s=' + encodeURIComponent('^(read|memchr)$'));
	assert.match(await page.textContent('#wp-matched'), /^Matched: 20\.00%/);
	await page.close();
});

test('clicking a frame zooms into it; Reset zoom restores', async () => {
	const page = await open(svgPath(SVG, 'FLAME_SVG'));
	const before = await frames(page);
	assert.equal(await page.isVisible('#wp-reset'), false, 'no Reset zoom before zooming');
	const c = await centre(page, one(before, 'compute_outer').id);
	await page.mouse.click(c.x, c.y);
	let fr = await frames(page);
	const z = one(fr, 'compute_outer');
	near(z.x, 10, 'zoomed frame starts at the left');
	near(z.width, GW, 'zoomed frame fills the width');
	near(byName(fr, 'compute_inner').find((f) => f.shown).width, GW * 400 / 500, 'child rescaled');
	for (const a of ['main', '__libc_start_main', '[main tid=4242]', 'all']) {
		const f = one(fr, a);
		assert.ok(f.shown && f.dim, `ancestor ${a} is shown dimmed`);
		near(f.width, GW, `ancestor ${a} spans the graph`);
	}
	for (const h of ['parse_input', 'write_output', '[worker tid=4243]'])
		assert.ok(!one(fr, h).shown, `${h} is hidden`);
	assert.ok(!byName(fr, 'compute_inner').find((f) => f.id !== z.id && f.x < 0 && f.shown), 'worker frames hidden');
	assert.equal(await page.evaluate(() => window.wpFlame.zoomed()), z.id);
	assert.equal(await page.isVisible('#wp-reset'), true, 'Reset zoom shown');
	await page.screenshot({ path: path.join(SHOTS, 'flame-demo-zoomed.png') });

	await page.click('#wp-reset');
	fr = await frames(page);
	for (const f of fr) {
		const b = before.find((x) => x.id === f.id);
		assert.ok(f.shown && !f.dim, `${f.name} shown again`);
		near(f.x, b.x, `${f.name} x restored`, 0.05);
		near(f.width, b.width, `${f.name} width restored`, 0.05);
		assert.equal(f.label, b.label, `${f.name} label restored`);
	}
	assert.equal(await page.isVisible('#wp-reset'), false);

	// the API zooms by name (the widest frame of that name) and resets
	await page.evaluate(() => window.wpFlame.zoom('sqrt'));
	fr = await frames(page);
	const sq = byName(fr, 'sqrt').filter((f) => f.shown);
	assert.equal(sq.length, 1);
	near(sq[0].width, GW, 'sqrt fills the width');
	assert.equal(await page.evaluate(() => { window.wpFlame.reset(); return window.wpFlame.zoomed(); }), null);

	// Escape undoes both a zoom and a search; '/' opens the search prompt
	await page.evaluate(() => { window.wpFlame.zoom('main'); window.wpFlame.search('read'); });
	await page.keyboard.press('Escape');
	assert.deepEqual(await page.evaluate(() => [window.wpFlame.zoomed(), window.wpFlame.matched()]), [null, null]);
	page.once('dialog', (d) => d.accept('^write'));
	await page.keyboard.press('/');
	assert.match(await page.textContent('#wp-matched'), /^Matched: 10\.00%/);
	assert.deepEqual(page.errors, []);
	await page.close();
});

test('differential graph: red for more in AFTER, blue for fewer', async () => {
	const page = await open(svgPath(DIFF_SVG, 'FLAME_DIFF_SVG'));
	const fr = await frames(page);
	const grew = byName(fr, 'sqrt').find((f) => f.title.includes('before 200'));
	assert.ok(grew, 'sqrt under compute_outer');
	const [r1, g1, b1] = rgb(grew.fill);
	assert.ok(r1 > 200 && g1 < r1 - 60 && b1 < r1 - 60, `grown frame is red: ${grew.fill}`);
	const [r2, g2, b2] = rgb(one(fr, 'read').fill);
	assert.ok(b2 > 200 && r2 < b2 - 60 && g2 < b2 - 60, `shrunk frame is blue: ${one(fr, 'read').fill}`);
	const [r3, g3, b3] = rgb(one(fr, 'memchr').fill);
	assert.ok(r3 === g3 && g3 === b3, `unchanged frame is grey: ${one(fr, 'memchr').fill}`);
	const c = await centre(page, grew.id);
	await page.mouse.move(c.x, c.y);
	assert.equal(await page.textContent('#wp-details'),
		'sqrt (300 samples, 30.00%; before 200, after 300, delta +10.00%)');
	near(grew.width, GW * 300 / TOTAL, 'width by AFTER');
	assert.deepEqual(page.errors, []);
	await page.screenshot({ path: path.join(SHOTS, 'flame-demo-diff.png') });
	await page.close();
});
