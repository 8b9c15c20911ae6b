import { render, Box, Text } from 'ink';

export interface ProgressState {
  done: number;
  total: number;
  ok: number;
  failed: number;
  last: string;
}

function Bar({ s, label }: { s: ProgressState; label: string }) {
  const width = 30;
  const filled = s.total === 0 ? width : Math.round((s.done / s.total) * width);
  return (
    <Box flexDirection="column">
      <Text>
        {label} [<Text color="green">{'#'.repeat(filled)}</Text>
        {'.'.repeat(width - filled)}] {s.done}/{s.total} <Text color="green">ok {s.ok}</Text>{' '}
        <Text color={s.failed > 0 ? 'red' : undefined}>failed {s.failed}</Text>
      </Text>
      <Text dimColor>{s.last}</Text>
    </Box>
  );
}

/** How progress shows: an ink bar (a terminal), one plain line per item (piped), or nothing (--json). */
export type ProgressMode = 'bar' | 'lines' | 'silent';

/**
 * A progress reporter: an ink progress bar on a terminal, one plain line per
 * item when stdout is piped (scripts and CI logs read those), nothing when the
 * command prints JSON.
 */
export function progressReporter(label: string, total: number, mode: ProgressMode = process.stdout.isTTY ? 'bar' : 'lines') {
  const s: ProgressState = { done: 0, total, ok: 0, failed: 0, last: '' };
  // A terminal that reports no width (the pty of `script`, some CI runners) would make ink wrap after every character.
  if (mode === 'bar' && !process.stdout.columns) process.stdout.columns = 80;
  const app = mode === 'bar' ? render(<Bar s={s} label={label} />) : null;
  return {
    tick(ok: boolean, line: string) {
      s.done++;
      if (ok) s.ok++;
      else s.failed++;
      s.last = line;
      if (app) app.rerender(<Bar s={{ ...s }} label={label} />);
      else if (mode === 'lines') process.stdout.write(`${line}\n`);
    },
    finish(): ProgressState {
      if (app) {
        app.rerender(<Bar s={{ ...s }} label={label} />);
        app.unmount();
      }
      return { ...s };
    },
  };
}
