import { describe, expect, it } from 'vitest';
import { screenOf } from './screen.js';
import { shorten } from './shorten.js';

describe('screenOf', () => {
  it('uses a terminal’s columns, else $COLUMNS, else 80', () => {
    expect(screenOf({ isTTY: true, columns: 130 }, {}).width).toBe(130);
    expect(screenOf({ isTTY: false }, { COLUMNS: '100' }).width).toBe(100);
    expect(screenOf({ isTTY: false }, {}).width).toBe(80);
  });

  it('colours only a terminal, never with NO_COLOR, --no-color or TERM=dumb', () => {
    expect(screenOf({ isTTY: true, columns: 80 }, {}).color).toBe(true);
    expect(screenOf({ isTTY: false }, {}).color).toBe(false);
    expect(screenOf({ isTTY: true, columns: 80 }, { NO_COLOR: '1' }).color).toBe(false);
    expect(screenOf({ isTTY: true, columns: 80 }, {}, true).color).toBe(false);
    expect(screenOf({ isTTY: true, columns: 80 }, { TERM: 'dumb' }).color).toBe(false);
  });
});

describe('shorten', () => {
  it('keeps both ends of an identifier and the head of prose', () => {
    expect(shorten('sha256:0123456789abcdef', 11)).toBe('sha25…bcdef');
    expect(shorten('a long sentence here', 8, 'end')).toBe('a long …');
    expect(shorten('short', 8)).toBe('short');
  });
});
