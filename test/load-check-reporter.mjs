/**
 * A node:test reporter (added beside the TAP reporter by `npm test`) that makes a test file which
 * never ran its tests impossible to miss.
 *
 * node:test runs each file in its own process. A file that throws while loading (a missing
 * fixture, a syntax error in an import) shows up as one failed "test" named after the file, so
 * the tests inside it vanish from the counts; a file that loads but registers no test at all
 * passes silently. This reporter names both kinds at the end of the run, on stderr, and sets a
 * failing exit code for the second kind (the first already fails the run).
 *
 * Event shapes: Node's `test:pass`/`test:fail` events (nodejs.org/api/test.html "Custom
 * reporters"); a file-level event is one at nesting 0 whose name is the file's path.
 *
 * Plain JavaScript (type-checked through JSDoc): Node loads reporters before any loader hook,
 * so a TypeScript reporter cannot be loaded through tsx.
 */
// @ts-check

/**
 * Consumes the run's events; yields the closing report lines (nothing when every file ran tests).
 * @param {AsyncIterable<{ type: string, data: { nesting: number, name: string, file?: string } }>} source
 * @returns {AsyncGenerator<string>}
 */
export default async function* loadCheckReporter(source) {
  /** @type {Set<string>} */
  const failedToLoad = new Set();
  /** @type {Set<string>} */
  const ranNoTest = new Set();
  for await (const event of source) {
    if (event.type !== 'test:pass' && event.type !== 'test:fail') continue;
    const { nesting, name, file } = event.data;
    if (nesting !== 0 || file === undefined || name !== file) continue;
    if (event.type === 'test:fail') failedToLoad.add(file);
    else ranNoTest.add(file);
  }
  /** @type {string[]} */
  const lines = [];
  for (const f of failedToLoad) lines.push(`TEST FILE FAILED TO LOAD, none of its tests ran: ${f} (its error is printed above)`);
  for (const f of ranNoTest) lines.push(`TEST FILE RAN NO TEST: ${f}`);
  if (ranNoTest.size > 0) process.exitCode = 1;
  if (lines.length > 0) yield `\n${'#'.repeat(100)}\n${lines.join('\n')}\n${'#'.repeat(100)}\n`;
}
