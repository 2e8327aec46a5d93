/**
 * The benchmarks' text: a Zipf-shaped vocabulary of 5,000 made-up words, like prose (a few words are
 * everywhere, most are rare), drawn from a fixed seed so that every run writes the same text.
 */
const SYLLABLES = [
  'ka',
  'lo',
  'mi',
  'ren',
  'tu',
  'sa',
  'vel',
  'dor',
  'pi',
  'na',
  'qua',
  'bri',
  'zo',
  'fen',
  'gal',
  'hu',
  'jor',
  'wex',
];
let seed = 42;
export const rand = (n: number) => {
  seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
  return seed % n;
};
export const VOCABULARY = Array.from({ length: 5000 }, (_, i) => {
  let w = '';
  for (let n = i + 1; n > 0; n = Math.floor(n / SYLLABLES.length)) w += SYLLABLES[n % SYLLABLES.length];
  return w;
});
const harmonic = VOCABULARY.reduce((sum, _w, i) => sum + 1 / (i + 1), 0);
const cumulative: number[] = [];
VOCABULARY.reduce((acc, _w, i) => (cumulative[i] = acc + 1 / (i + 1) / harmonic), 0);
export const zipfWord = () => {
  const u = rand(1_000_000) / 1_000_000;
  let lo = 0;
  let hi = cumulative.length - 1;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (cumulative[mid]! < u) lo = mid + 1;
    else hi = mid;
  }
  return VOCABULARY[lo]!;
};
export const sentence = (n: number) => Array.from({ length: n }, zipfWord).join(' ');
/** Content words (frequency ranks 50-2,000), what recall queries use. */
export const queryWord = () => VOCABULARY[50 + rand(1950)]!;
