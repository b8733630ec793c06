import { render } from 'preact';
import './style.css';
import { startKeyboard } from './keyboard';
import { askPermission, startNotifications } from './notify';
import { startPresence } from './presence';
import { startRouting } from './route';
import { pollForever, register } from './server';
import { App, startTheme } from './ui/App';

async function main(): Promise<void> {
  const root = document.getElementById('app');
  if (root === null) return;
  try {
    await register();
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
