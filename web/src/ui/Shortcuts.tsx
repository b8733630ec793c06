import { SHORTCUTS } from '../keyboard';
import { closeOverlay } from '../route';
import { Dialog } from './Dialog';

export function ShortcutsOverlay() {
  return (
    <Dialog title="Keyboard shortcuts" onClose={closeOverlay}>
      <table class="shortcuts">
        <thead><tr><th scope="col">Key</th><th scope="col">Action</th></tr></thead>
        <tbody>{SHORTCUTS.map(([k, v]) => <tr key={k}><td><kbd>{k}</kbd></td><td>{v}</td></tr>)}</tbody>
      </table>
    </Dialog>
  );
}
