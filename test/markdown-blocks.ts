/** Fenced code blocks of a Markdown text, for the tests that run the README's and docs' snippets. */

/** One fenced block: the line its fence opens on (1-based), its language, its lines. */
export interface FencedBlock {
  readonly line: number;
  readonly lang: string;
  readonly lines: readonly string[];
}

/** Every fenced block of `text`, in order. */
export function fencedBlocks(text: string): FencedBlock[] {
  const out: FencedBlock[] = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const open = /^```(\S*)\s*$/.exec(lines[i] ?? '');
    if (open === null) continue;
    const start = i;
    const body: string[] = [];
    for (i++; i < lines.length && !/^```\s*$/.test(lines[i] ?? ''); i++) body.push(lines[i] ?? '');
    out.push({ line: start + 1, lang: (open[1] ?? '').toLowerCase(), lines: body });
  }
  return out;
}
