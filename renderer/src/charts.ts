/**
 * Small bar charts drawn as SVG elements by preact (no HTML strings, no inline style: the CSP allows
 * neither). Each chart has a title for screen readers and a sentence under it that says what it shows,
 * so the numbers are there without the picture. The time axis is text under the bars (text inside a
 * stretched SVG would be stretched too): the first slot's time, the middle one's, and the last's.
 */
import { html } from 'htm/preact';

export interface Series {
  /** Class of the bars: `requests`, `errors`, `runs`, `tokens`. */
  kind: string;
  label: string;
  values: number[];
}

const WIDTH = 300;
const HEIGHT = 64;

/** A slot's start as the axis shows it: hours and minutes, with the day when it is not today. */
export function axisTime(iso: string, now = new Date()): string {
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return '';
  const time = d.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' });
  return d.toDateString() === now.toDateString() ? time : `${d.toLocaleDateString([], { weekday: 'short' })} ${time}`;
}

/** Bars of one or two series over the same slots (minutes or hours); the second is drawn over the first. */
export function BarChart({
  id,
  title,
  series,
  summary,
  slotLabel,
  times,
}: {
  id: string;
  title: string;
  series: Series[];
  summary: string;
  slotLabel: string;
  times: string[];
}) {
  const slots = Math.max(...series.map((s) => s.values.length), 1);
  const ticks =
    times.length > 0 ? [0, Math.floor((times.length - 1) / 2), times.length - 1].map((i) => axisTime(times[i]!)) : [];
  const top = Math.max(1, ...series.flatMap((s) => s.values));
  const step = WIDTH / slots;
  return html`<figure class="chart" data-chart=${id}>
    <figcaption id=${`${id}-title`}>${title}</figcaption>
    <span class="chart-top" aria-hidden="true">${top}</span>
    <svg
      viewBox=${`0 0 ${WIDTH} ${HEIGHT}`}
      role="img"
      aria-labelledby=${`${id}-title ${id}-summary`}
      preserveAspectRatio="none"
    >
      <line class="axis" x1="0" y1=${HEIGHT - 0.5} x2=${WIDTH} y2=${HEIGHT - 0.5} />
      ${series.map((s) =>
        s.values.map((v, i) =>
          v > 0
            ? html`<rect
                key=${`${s.kind}-${i}`}
                class=${`bar ${s.kind}`}
                x=${i * step + 0.5}
                width=${Math.max(step - 1, 1)}
                y=${HEIGHT - (v / top) * (HEIGHT - 2)}
                height=${(v / top) * (HEIGHT - 2)}
              >
                <title>
                  ${`${s.label}: ${v} (${slotLabel} from ${times[i] ? axisTime(times[i]) : `${i + 1} of ${slots}`})`}
                </title>
              </rect>`
            : null,
        ),
      )}
    </svg>
    ${ticks.length > 0 ? html`<div class="time-axis" aria-hidden="true">${ticks.map((t, i) => html`<span key=${i}>${t}</span>`)}</div>` : null}
    <p class="chart-summary" id=${`${id}-summary`}>${summary}</p>
    <p class="legend">${series.map((s) => html`<span key=${s.kind} class=${`key ${s.kind}`}>${s.label}</span>`)}</p>
  </figure>`;
}

export function sum(values: number[]): number {
  return values.reduce((a, b) => a + b, 0);
}
