/**
 * Loops between rooms, as a reader of the tree sees them: at every folder, its files and
 * subfolders are rooms, and room A imports room B when some file in A imports some file in B. A
 * tree can have no import circle between files and still a loop between folders (a file of
 * `openai/` imports one of `anthropic/`, another file of `anthropic/` one of `openai/`); such a
 * loop means neither folder can be read, moved or reused without the other.
 */
export function folderLoops(imports: Iterable<readonly [from: string, to: string]>): string[] {
  /** folder → room → rooms it imports */
  const byFolder = new Map<string, Map<string, Set<string>>>();
  for (const [from, to] of imports) {
    const a = from.split('/');
    const b = to.split('/');
    let i = 0;
    while (i < a.length - 1 && i < b.length - 1 && a[i] === b[i]) i++;
    if (a[i] === b[i]) continue;
    const folder = a.slice(0, i).join('/') || '.';
    const rooms = byFolder.get(folder) ?? new Map<string, Set<string>>();
    byFolder.set(folder, rooms);
    const out = rooms.get(a[i]!) ?? new Set<string>();
    rooms.set(a[i]!, out);
    out.add(b[i]!);
  }
  const loops: string[] = [];
  for (const [folder, rooms] of byFolder) {
    for (const loop of stronglyConnected(rooms)) loops.push(`${folder}: ${loop.sort().join(' ⇄ ')}`);
  }
  return loops.sort();
}

/** Tarjan's strongly connected components of more than one room. */
function stronglyConnected(graph: Map<string, Set<string>>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (v: string) => {
    index.set(v, index.size);
    low.set(v, index.get(v)!);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) !== index.get(v)) return;
    const component: string[] = [];
    let w: string;
    do {
      w = stack.pop()!;
      onStack.delete(w);
      component.push(w);
    } while (w !== v);
    if (component.length > 1) found.push(component);
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return found;
}
