/** Counts as a person writes them: "1 field", "2 fields", "1 CLI run". */
export function plural(n: number, one: string, many = `${one}s`): string {
  return `${n.toLocaleString('en')} ${n === 1 ? one : many}`;
}
