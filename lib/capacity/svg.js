// @ts-check
/** Inline SVG line and bar charts, with nothing loaded from elsewhere: the capacity page is whole offline. */
import { escapeHtml } from '../serve/escape.js';

const WIDTH = 560;
const HEIGHT = 300;
const PAD = { left: 64, right: 30, top: 52, bottom: 44 };

/** A round upper bound for an axis, and its ticks at 1, 2 or 5 times a power of ten. @param {number} max */
export function niceAxis(max) {
  if (!(max > 0)) return { top: 1, ticks: [0, 0.5, 1] };
  const raw = max / 4;
  const power = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((m) => m * power).find((s) => s >= raw) ?? 10 * power;
  const top = Math.ceil(max / step) * step;
  const ticks = [];
  for (let v = 0; v <= top + step / 2; v += step) ticks.push(Number(v.toPrecision(12)));
  return { top, ticks };
}

/** @param {number} v */
const label = (v) => (v >= 1000 ? Math.round(v).toLocaleString('en') : v >= 10 ? String(Math.round(v)) : String(Number(v.toPrecision(2))));

/** @param {string} title @param {string} yTitle @param {number} max */
function frame(title, yTitle, max) {
  const { top, ticks } = niceAxis(max);
  const plotH = HEIGHT - PAD.top - PAD.bottom;
  const y = (/** @type {number} */ v) => PAD.top + plotH - (v / top) * plotH;
  const parts = [`<text x="${WIDTH / 2}" y="16" text-anchor="middle" class="title">${escapeHtml(title)}</text>`];
  for (const tick of ticks) {
    parts.push(`<line x1="${PAD.left}" x2="${WIDTH - PAD.right}" y1="${y(tick).toFixed(1)}" y2="${y(tick).toFixed(1)}" class="grid"/>`);
    parts.push(`<text x="${PAD.left - 6}" y="${(y(tick) + 4).toFixed(1)}" text-anchor="end">${label(tick)}</text>`);
  }
  parts.push(`<text transform="translate(14 ${PAD.top + plotH / 2}) rotate(-90)" text-anchor="middle">${escapeHtml(yTitle)}</text>`);
  return { parts, y };
}

/** @typedef {{ name: string, color: string, values: (number | null)[] }} Series */

/**
 * The limit is drawn dashed.
 * @param {{ title: string, xTitle: string, yTitle: string, categories: string[], series: Series[], limit?: { value: number, label: string } }} chart
 */
export function lineChart({ title, xTitle, yTitle, categories, series, limit }) {
  const values = series.flatMap((s) => s.values).filter((v) => v !== null);
  const { parts, y } = frame(title, yTitle, Math.max(0, ...values, limit?.value ?? 0));
  const plotW = WIDTH - PAD.left - PAD.right;
  const x = (/** @type {number} */ i) => PAD.left + (categories.length === 1 ? plotW / 2 : (i * plotW) / (categories.length - 1));
  categories.forEach((category, i) => parts.push(`<text x="${x(i).toFixed(1)}" y="${HEIGHT - PAD.bottom + 18}" text-anchor="middle">${escapeHtml(category)}</text>`));
  parts.push(`<text x="${PAD.left + plotW / 2}" y="${HEIGHT - 10}" text-anchor="middle">${escapeHtml(xTitle)}</text>`);
  if (limit) {
    parts.push(`<line x1="${PAD.left}" x2="${WIDTH - PAD.right}" y1="${y(limit.value).toFixed(1)}" y2="${y(limit.value).toFixed(1)}" class="limit"/>`);
    parts.push(`<text x="${WIDTH - PAD.right}" y="${(y(limit.value) - 5).toFixed(1)}" text-anchor="end" class="limit-label">${escapeHtml(limit.label)}</text>`);
  }
  series.forEach((s, k) => {
    const points = s.values.map((v, i) => (v === null ? null : `${x(i).toFixed(1)},${y(v).toFixed(1)}`)).filter((p) => p !== null);
    if (points.length > 1) parts.push(`<polyline points="${points.join(' ')}" fill="none" stroke="${s.color}" stroke-width="2.5"/>`);
    for (const p of points) parts.push(`<circle cx="${p.split(',')[0]}" cy="${p.split(',')[1]}" r="4" fill="${s.color}"/>`);
    parts.push(legend(k, s.name, s.color));
  });
  return svg(title, parts);
}

/** @param {{ title: string, yTitle: string, groups: { label: string, bars: { name: string, color: string, value: number | null, text?: string }[] }[] }} chart */
export function barChart({ title, yTitle, groups }) {
  const values = groups.flatMap((g) => g.bars.map((b) => b.value)).filter((v) => v !== null);
  const { parts, y } = frame(title, yTitle, Math.max(0, ...values));
  const plotW = WIDTH - PAD.left - PAD.right;
  const groupW = plotW / Math.max(1, groups.length);
  const most = Math.max(1, ...groups.map((g) => g.bars.length));
  const barW = Math.min(48, (groupW * 0.8) / most);
  /** @type {Map<string, string>} */ const names = new Map();
  groups.forEach((group, g) => {
    const left = PAD.left + g * groupW + (groupW - barW * group.bars.length) / 2;
    group.bars.forEach((bar, b) => {
      names.set(bar.name, bar.color);
      const bx = left + b * barW;
      if (bar.value === null) {
        parts.push(`<text x="${(bx + barW / 2).toFixed(1)}" y="${(y(0) - 4).toFixed(1)}" text-anchor="middle" class="value">${escapeHtml(bar.text ?? 'n/a')}</text>`);
        return;
      }
      parts.push(`<rect x="${(bx + 2).toFixed(1)}" y="${y(bar.value).toFixed(1)}" width="${(barW - 4).toFixed(1)}" height="${Math.max(0.5, y(0) - y(bar.value)).toFixed(1)}" fill="${bar.color}"/>`);
      parts.push(`<text x="${(bx + barW / 2).toFixed(1)}" y="${(y(bar.value) - 4).toFixed(1)}" text-anchor="middle" class="value">${escapeHtml(bar.text ?? label(bar.value))}</text>`);
    });
    parts.push(`<text x="${(PAD.left + g * groupW + groupW / 2).toFixed(1)}" y="${HEIGHT - PAD.bottom + 18}" text-anchor="middle">${escapeHtml(group.label)}</text>`);
  });
  [...names].forEach(([name, color], k) => parts.push(legend(k, name, color)));
  return svg(title, parts);
}

/** @param {number} k @param {string} name @param {string} color */
function legend(k, name, color) {
  const lx = PAD.left + k * 170;
  return `<rect x="${lx}" y="28" width="12" height="12" fill="${color}"/><text x="${lx + 18}" y="38">${escapeHtml(name)}</text>`;
}

/** @param {string} title @param {string[]} parts */
function svg(title, parts) {
  return `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ${WIDTH} ${HEIGHT}" width="${WIDTH}" height="${HEIGHT}" role="img" aria-label="${escapeHtml(title)}">\n${parts.join('\n')}\n</svg>`;
}
