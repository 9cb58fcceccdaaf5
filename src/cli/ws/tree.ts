/**
 * Text rendering of `kubectl ws tree`: the layout of github xlab/treeprint, which kcp's plugin
 * uses (kcp-dev/kcp `staging/src/github.com/kcp-dev/cli/pkg/workspace/plugin/tree.go`), and the
 * column alignment of Go's `text/tabwriter` for `--wide`.
 *
 * treeprint prints an unnamed root as `.`, then one line per node: for each ancestor level `│`
 * followed by 3 spaces (or 4 spaces below a last child), then `├──` (or `└──` for the last
 * child), a space and the label.
 */

/** A node of the printed tree. */
export interface TreeNode {
  label: string;
  children: TreeNode[];
}

/**
 * Renders `roots` below a `.` line as treeprint's `String()` does (every line ends with `\n`).
 */
export function renderTree(roots: TreeNode[]): string {
  const lines = ['.'];
  const walk = (nodes: TreeNode[], prefix: string): void => {
    nodes.forEach((node, i) => {
      const last = i === nodes.length - 1;
      lines.push(`${prefix}${last ? '└──' : '├──'} ${node.label}`);
      if (node.children.length > 0) walk(node.children, prefix + (last ? '    ' : '│   '));
    });
  };
  walk(roots, '');
  return `${lines.join('\n')}\n`;
}

/**
 * Aligns tab-separated cells as Go's `tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)`: cells terminated by
 * a tab form columns; consecutive lines that have a cell in a column form a block whose width is
 * its widest cell (in code points) plus 2; the text after a line's last tab is not aligned.
 */
export function alignTabs(text: string): string {
  const lines = text.split('\n').map((l) => l.split('\t'));
  const width = (s: string): number => [...s].length;
  const out = lines.map((cells) => [...cells]);
  const alignColumn = (col: number, from: number, to: number): void => {
    let w = 0;
    for (let i = from; i < to; i++) w = Math.max(w, width(lines[i]![col]!));
    for (let i = from; i < to; i++) out[i]![col] = lines[i]![col]!.padEnd(lines[i]![col]!.length + w + 2 - width(lines[i]![col]!));
  };
  const maxCols = Math.max(...lines.map((c) => c.length - 1));
  for (let col = 0; col < maxCols; col++) {
    let start = -1;
    for (let i = 0; i <= lines.length; i++) {
      const has = i < lines.length && lines[i]!.length - 1 > col;
      if (has && start < 0) start = i;
      if (!has && start >= 0) { alignColumn(col, start, i); start = -1; }
    }
  }
  return out.map((cells) => cells.join('')).join('\n');
}
