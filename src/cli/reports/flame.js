(function () {
'use strict';
var svg = document.documentElement;
var num = function (el, a) { return +el.getAttribute(a); };
var total = num(svg, 'data-total'), xpad = num(svg, 'data-xpad'), gw = num(svg, 'data-gw');
var HL = 'rgb(230,0,230)';
var $ = function (id) { return document.getElementById(id); };
var details = $('wp-details'), matchedEl = $('wp-matched'), resetBtn = $('wp-reset');
var searchBtn = $('wp-search'), clearBtn = $('wp-clear'), framesG = $('wp-frames');
var hint = details.textContent;
var frames = [], byId = {}, zoomed = null, lastRe = null, lastPct = null;
var gs = framesG.children;
for (var i = 0; i < gs.length; i++) {
	var g = gs[i], t = g.getElementsByTagName('title')[0];
	var r = g.getElementsByTagName('rect')[0], tx = g.getElementsByTagName('text')[0];
	var tt = t.textContent, k = tt.lastIndexOf(' (');
	var f = { i: i, id: g.id, g: g, rect: r, text: tx, title: tt,
		name: k >= 0 ? tt.slice(0, k) : tt, s: num(g, 'data-s'), n: num(g, 'data-n'),
		d: num(g, 'data-d'), cls: g.getAttribute('class'), fill: r.getAttribute('fill'), x0: num(r, 'x'), w0: num(r, 'width'),
		x: num(r, 'x'), w: num(r, 'width'), hit: false };
	frames.push(f);
	byId[g.id] = f;
}
/* average glyph width of the label font, measured once */
var cw = 7;
(function () {
	if (!frames.length) return;
	var tx = frames[0].text, old = tx.textContent;
	var probe = 'abcdefghijklmnopqrstuvwxyz_ABCDEFGHIJKLMNOPQRSTUVWXYZ::0123456789';
	tx.textContent = probe;
	var l = tx.getComputedTextLength();
	if (l > 0) cw = l / probe.length;
	tx.textContent = old;
})();
function cut(name, m) {
	if (m < 3) return '';
	if (name.length <= m) return name;
	var e = m - 1, c = name.charCodeAt(e - 1);
	if (c >= 0xd800 && c <= 0xdbff) e--;
	return name.slice(0, e) + '\u2026';
}
/* labels: guess from the average glyph width, then measure (one layout) and shorten the few
 * that still overflow their frame */
function fitAll(list) {
	var over = [], i, f;
	for (i = 0; i < list.length; i++) {
		f = list[i];
		f.text.setAttribute('x', (f.x + 3).toFixed(2));
		f.lab = f.w - 6 < cw * 2.5 ? '' : cut(f.name, Math.floor((f.w - 6) / cw));
		if (f.text.textContent !== f.lab) f.text.textContent = f.lab;
	}
	for (i = 0; i < list.length; i++) {
		f = list[i];
		if (f.lab !== '' && f.text.getComputedTextLength() > f.w - 6) over.push(f);
	}
	for (i = 0; i < over.length; i++) {
		f = over[i];
		var m = f.lab.length;
		do {
			m--;
			f.lab = cut(f.name, m);
			f.text.textContent = f.lab;
		} while (f.lab !== '' && f.text.getComputedTextLength() > f.w - 6);
	}
}
/* a frame's classes: its own ("f", and in hot/cold graphs its state: warm, cool, wait,
 * held, holder) plus what zooming makes of it (dim, hide) */
function setCls(f, extra) {
	f.g.setAttribute('class', extra ? f.cls + ' ' + extra : f.cls);
}
function place(f, x, w, extra, vis) {
	f.x = x; f.w = w;
	f.rect.setAttribute('x', x.toFixed(2));
	f.rect.setAttribute('width', w.toFixed(2));
	setCls(f, extra);
	vis.push(f);
}
function find(what) {
	if (what == null) return null;
	if (typeof what === 'object' && what.g) return what;
	if (typeof what === 'number') return frames[what] || null;
	what = String(what);
	if (byId[what]) return byId[what];
	var best = null;
	for (var i = 0; i < frames.length; i++) {
		var f = frames[i];
		if (f.name === what && (!best || f.n > best.n)) best = f;
	}
	return best;
}
function zoom(what) {
	var z = find(what);
	if (!z) return null;
	if (z.d === 0) { reset(); return z.id; }
	zoomed = z;
	var scale = gw / z.n, end = z.s + z.n, vis = [];
	for (var i = 0; i < frames.length; i++) {
		var f = frames[i];
		if (f.d < z.d) {
			if (f.s <= z.s && f.s + f.n >= end) place(f, xpad, gw, 'dim', vis);
			else setCls(f, 'hide');
		} else if (f.s >= z.s && f.s + f.n <= end) {
			place(f, xpad + (f.s - z.s) * scale, f.n * scale, '', vis);
		} else {
			setCls(f, 'hide');
		}
	}
	fitAll(vis);
	resetBtn.setAttribute('class', 'btn');
	return z.id;
}
function reset() {
	zoomed = null;
	var vis = [];
	for (var i = 0; i < frames.length; i++) {
		var f = frames[i];
		place(f, f.x0, f.w0, '', vis);
	}
	fitAll(vis);
	resetBtn.setAttribute('class', 'btn hidden');
}
function paint(f) {
	f.rect.setAttribute('fill', f.hit ? HL : f.fill);
}
function clearSearch() {
	lastRe = null; lastPct = null;
	for (var i = 0; i < frames.length; i++) {
		if (frames[i].hit) { frames[i].hit = false; paint(frames[i]); }
	}
	matchedEl.textContent = '';
	clearBtn.setAttribute('class', 'btn hidden');
}
function search(re) {
	if (re == null || re === '') { clearSearch(); return null; }
	var rx;
	try {
		rx = re instanceof RegExp ? new RegExp(re.source, re.flags.replace(/[gy]/g, ''))
			: new RegExp(String(re));
	} catch (e) {
		clearSearch();
		matchedEl.textContent = 'Invalid regular expression';
		return null;
	}
	var hits = [];
	for (var i = 0; i < frames.length; i++) {
		var f = frames[i], h = rx.test(f.name);
		if (h !== f.hit) { f.hit = h; paint(f); }
		if (h) hits.push(f);
	}
	/* frames nest as intervals [s, s+n): count each sample once */
	hits.sort(function (a, b) { return a.s - b.s || b.n - a.n; });
	var sum = 0, end = -1;
	for (var j = 0; j < hits.length; j++) {
		var h2 = hits[j];
		if (h2.s >= end) { sum += h2.n; end = h2.s + h2.n; }
		else if (h2.s + h2.n > end) { sum += h2.s + h2.n - end; end = h2.s + h2.n; }
	}
	lastRe = rx.source;
	lastPct = total > 0 ? sum * 100 / total : 0;
	matchedEl.textContent = 'Matched: ' + lastPct.toFixed(2) + '% (' + hits.length +
		(hits.length === 1 ? ' frame)' : ' frames)');
	clearBtn.setAttribute('class', 'btn');
	return lastPct;
}
function ask() {
	var re = window.prompt('Search frames (regular expression):', lastRe || '');
	if (re !== null) search(re);
}
function frameOf(e) {
	var g = e.target && e.target.closest ? e.target.closest('g.f') : null;
	return g ? byId[g.id] : null;
}
framesG.addEventListener('mouseover', function (e) {
	var f = frameOf(e);
	if (f) details.textContent = f.title;
});
framesG.addEventListener('mouseout', function (e) {
	if (!e.relatedTarget || !e.relatedTarget.closest || !e.relatedTarget.closest('g.f'))
		details.textContent = hint;
});
framesG.addEventListener('click', function (e) {
	var f = frameOf(e);
	if (f) zoom(f);
});
resetBtn.addEventListener('click', reset);
searchBtn.addEventListener('click', ask);
clearBtn.addEventListener('click', clearSearch);
window.addEventListener('keydown', function (e) {
	if ((e.key === 'f' && (e.ctrlKey || e.metaKey)) || (e.key === '/' && !e.ctrlKey)) {
		e.preventDefault();
		ask();
	} else if (e.key === 'Escape') {
		clearSearch();
		reset();
	}
});
fitAll(frames);
try {
	var q = new URLSearchParams(window.location.search);
	if (q.get('z')) zoom(q.get('z'));
	if (q.get('s')) search(q.get('s'));
} catch (e) { /* no query string support */ }
window.wpFlame = {
	search: search,
	clearSearch: clearSearch,
	matched: function () { return lastPct; },
	zoom: zoom,
	reset: reset,
	zoomed: function () { return zoomed ? zoomed.id : null; },
	total: function () { return total; },
	frames: function () {
		return frames.map(function (f) {
			return { id: f.id, name: f.name, samples: f.n, start: f.s, depth: f.d,
				x: f.x, width: f.w, hidden: f.g.classList.contains('hide'),
				state: (f.cls.split(' ')[1] || ''), matched: f.hit };
		});
	}
};
})();
