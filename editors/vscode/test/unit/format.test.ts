// The formatter: the same words advise's own outputs use (analysis/units.c).
import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import { findingLabel, formatAge, formatAgeOld, formatBytes, formatCount, formatGain, formatSeconds, formatShare, plainHint }
    from '../../src/model/format';
import type { Finding } from '../../src/model/protocol';

test('seconds in ns, µs, ms and s with two or three significant digits', () => {
    assert.equal(formatSeconds(0), '0 ns');
    assert.equal(formatSeconds(812e-9), '812 ns');
    assert.equal(formatSeconds(6.3e-6), '6.30 µs');
    assert.equal(formatSeconds(0.00069), '690 µs');
    assert.equal(formatSeconds(0.0012), '1.20 ms');
    assert.equal(formatSeconds(0.08512531), '85.1 ms');
    assert.equal(formatSeconds(0.8207167), '821 ms');
    assert.equal(formatSeconds(0.9996), '1.00 s');
    assert.equal(formatSeconds(4.22), '4.22 s');
    assert.equal(formatSeconds(1234), '1234 s');
    assert.equal(formatSeconds(-0.002), '-2.00 ms');
    assert.equal(formatSeconds(NaN), '? s');
});

test('bytes in decimal multiples with two or three significant digits', () => {
    assert.equal(formatBytes(0), '0 bytes');
    assert.equal(formatBytes(512), '512 bytes');
    assert.equal(formatBytes(999.6), '1.00 kB');
    assert.equal(formatBytes(20484), '20.5 kB');
    assert.equal(formatBytes(12582912), '12.6 MB');
    assert.equal(formatBytes(1276116992), '1.28 GB');
    assert.equal(formatBytes(150109880320), '150 GB');
    assert.equal(formatBytes(-33554432), '-33.6 MB');
    assert.equal(formatBytes(NaN), '? bytes');
});

test('shares as percentages', () => {
    assert.equal(formatShare(0), '0%');
    assert.equal(formatShare(0.0004), '<0.1%');
    assert.equal(formatShare(0.031), '3.1%');
    assert.equal(formatShare(0.0995), '10%');
    assert.equal(formatShare(0.29), '29%');
    assert.equal(formatShare(1), '100%');
    assert.equal(formatShare(Infinity), '?%');
});

test('counts and ages', () => {
    assert.equal(formatCount(6432), '6,432');
    assert.equal(formatCount(1234567), '1,234,567');
    assert.equal(formatCount(7), '7');
    assert.equal(formatAge(30), 'just now');
    assert.equal(formatAge(61), '1 minute');
    assert.equal(formatAge(3 * 3600 + 5), '3 hours');
    assert.equal(formatAge(2 * 86400), '2 days');
    assert.equal(formatAge(15 * 86400), '2 weeks');
    assert.equal(formatAge(400 * 86400), '1 year');
    assert.equal(formatAgeOld(2 * 86400), '2 days old');
    assert.equal(formatAgeOld(5), 'just now');
    assert.equal(formatAge(-1), 'of unknown age');
});

test('the hint in plain words: before the first colon, no backticks, cut on a word', () => {
    assert.equal(plainHint('torch.randn() fills this tensor in host memory and then copies it to the GPU: create it there with device='),
                 'torch.randn() fills this tensor in host memory and then copies it to the GPU');
    assert.equal(plainHint('`loss.item()` waits for the GPU on every iteration of this loop, so the host cannot queue work ahead'),
                 'loss.item() waits for the GPU on every iteration of this loop');
    assert.equal(plainHint("the GPU sat idle 160 ms before this line's work arrived, 5 times (801 ms, 29% of the run); the host was busy after line 95"),
                 "the GPU sat idle 160 ms before this line's work arrived, 5 times (801 ms, 29% of the run)");
    const long = plainHint('a very long message without any of the stops that goes on and on about the GPU and the host and the copies and the kernels');
    assert.ok(long.length <= 90, long);
    assert.ok(long.endsWith('…'), long);
    assert.equal(plainHint('launch-bound: 2,716 tiny kernel launches from lines 107-110 of `main` (median 2.91 µs on the GPU) while the GPU idles'),
                 'launch-bound: 2,716 tiny kernel launches from lines 107-110 of main');
    assert.equal(plainHint('short'), 'short');
});

const base: Finding = {
    uri: 'file:///w/a.py', range: { start: { line: 3, character: 0 }, end: { line: 3, character: 4 } },
    code: 'PY004', name: 'host-tensor-then-copy', severity: 2,
    message: 'torch.randn() fills this tensor in host memory and then copies it to the GPU: create it there with device=',
    evidence: [], gain: null, cost_seconds: 0, stale: false,
};

test('the gain in words: estimated, else measured, with the share of the run', () => {
    const gained = { ...base, gain: { seconds: 0.0167, scope: 'program' }, cost_seconds: 0.0167 };
    assert.equal(formatGain(gained, 2.78), 'about 16.7 ms, 0.6% of the run');
    assert.equal(formatGain(gained), 'about 16.7 ms');
    assert.equal(formatGain({ ...base, gain: { seconds: 0.0012, scope: 'program' }, cost_seconds: 0.0012 }, 0.0086),
                 'about 1.20 ms, 14% of the run');
    assert.equal(formatGain({ ...base, gain: { seconds: 3e-6, scope: 'kernel' }, cost_seconds: 3e-6 }, 1),
                 'about 3.00 µs local to the kernel');
    assert.equal(formatGain({ ...base, cost_seconds: 0.0851 }, 2.78), 'costs 85.1 ms, 3.1% of the run');
    assert.equal(formatGain(base, 2.78), null);
    assert.equal(findingLabel(gained, 2.78),
                 'torch.randn() fills this tensor in host memory and then copies it to the GPU — about 16.7 ms, 0.6% of the run');
    assert.equal(findingLabel(base), 'torch.randn() fills this tensor in host memory and then copies it to the GPU');
});

test('a shell word for the profiling terminal', async () => {
    const { shellQuote } = await import('../../src/model/text');
    assert.equal(shellQuote('/usr/local/bin/advise'), '/usr/local/bin/advise');
    assert.equal(shellQuote('/home/me/my tools/advise'), "'/home/me/my tools/advise'");
    assert.equal(shellQuote("/tmp/it's/advise"), "'/tmp/it'\\''s/advise'");
    assert.equal(shellQuote('/x/$(rm -rf ~)/advise'), "'/x/$(rm -rf ~)/advise'");
});

test('the report page gets a Content-Security-Policy that runs and loads nothing', async () => {
    const { withCsp } = await import('../../src/model/text');
    const page = withCsp('<!DOCTYPE html>\n<html><head><title>r</title></head><body><p>x</p></body></html>');
    assert.match(page, /<head>\n<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; img-src data:; font-src data:">/);
    assert.ok(!/script-src/.test(page));
    assert.match(withCsp('<p>bare</p>'), /^<!DOCTYPE html><html><head><meta http-equiv="Content-Security-Policy"[^>]*><\/head><body><p>bare<\/p><\/body><\/html>$/);
});
