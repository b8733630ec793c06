import { render } from 'preact';
import './style.css';
import { startKeyboard } from './keyboard';
import { prefetchFirstPage } from './msglist';
import { askPermission, startNotifications } from './notify';
import { startPresence } from './presence';
import { parseRoute, startRouting } from './route';
import { userSettings } from './store';
import { pollForever, register } from './server';
import { App, startTheme } from './ui/App';

const HOME_VIEW = 'hearth-home-view';

/**
 * The first page of messages of the narrow the URL names, asked for alongside
 * /register rather than after it. Without a fragment the home view decides; the one
 * seen last time stands in until /register tells (a wrong guess is a wasted request).
 */
function prefetch(): void {
  try {
    if (location.hash.replace(/^#/, '') === '') {
      // Only the combined feed, of the home views, is a list of messages.
      if (localStorage.getItem(HOME_VIEW) === 'all_messages') prefetchFirstPage([]);
      return;
    }
    const r = parseRoute(location.hash);
    if (r.view === 'narrow') prefetchFirstPage(r.narrow);
  } catch {
    /* No prefetch: the list asks once /register has answered. */
  }
}

async function main(): Promise<void> {
  const root = document.getElementById('app');
  if (root === null) return;
  // A measuring build only (HEARTH_PROBE=1): removed from any other.
  if (__HEARTH_PROBE__) await import('./probe');
  try {
    prefetch();
    await register();
    try {
      localStorage.setItem(HOME_VIEW, String(userSettings.peek().web_home_view ?? ''));
    } catch {
      /* Storage refused: the next load prefetches nothing for the home view. */
    }
  } catch (e) {
    root.replaceChildren();
    const p = document.createElement('p');
    p.className = 'app-loading error';
    p.setAttribute('role', 'alert');
    p.textContent = `hearth could not load: ${e instanceof Error ? e.message : String(e)}`;
    root.append(p);
    return;
  }
  startRouting();
  startTheme();
  root.replaceChildren();
  render(<App />, root);
  startKeyboard();
  startNotifications();
  startPresence();
  document.addEventListener('click', askPermission, { once: true });
  void pollForever();
}

void main();
