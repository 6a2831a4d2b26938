import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';

export interface BenchTreeOptions {
  /** Files per folder. Default 100. */
  filesPerDir?: number;
  /** Folders per parent folder before going one level deeper. Default 10. */
  dirsPerDir?: number;
  /** Bytes of each file. Default 64. */
  fileSize?: number;
}

export interface BenchTree {
  root: string;
  files: number;
  dirs: number;
  /** Relative paths of every file created, in creation order. */
  paths: string[];
}

/**
 * Create a tree of `count` small files under `root` (for the listFiles benchmark and tests):
 * `d0/d3/f42.txt`-style paths, `filesPerDir` files per folder, folders fanning out by
 * `dirsPerDir`. Returns what was created.
 */
export async function createBenchTree(root: string, count: number, opts: BenchTreeOptions = {}): Promise<BenchTree> {
  const filesPerDir = opts.filesPerDir ?? 100;
  const dirsPerDir = opts.dirsPerDir ?? 10;
  const content = Buffer.alloc(opts.fileSize ?? 64, 'x');
  const paths: string[] = [];
  const dirCount = Math.ceil(count / filesPerDir);
  const dirs = new Set<string>();
  for (let d = 0; d < dirCount; d++) {
    // Folder d as digits in base dirsPerDir: 0 → d0, 12 → d1/d2 (with dirsPerDir 10).
    const parts: string[] = [];
    let n = d;
    do {
      parts.unshift(`d${n % dirsPerDir}`);
      n = Math.floor(n / dirsPerDir);
    } while (n > 0);
    const rel = parts.join('/');
    await mkdir(path.join(root, rel), { recursive: true });
    for (let i = 0; i < parts.length; i++) dirs.add(parts.slice(0, i + 1).join('/'));
    const batch: Promise<void>[] = [];
    for (let f = 0; f < filesPerDir && paths.length < count; f++) {
      const file = `${rel}/f${f}.txt`;
      paths.push(file);
      batch.push(writeFile(path.join(root, file), content));
    }
    await Promise.all(batch);
  }
  return { root, files: paths.length, dirs: dirs.size, paths };
}
