import { effect, signal } from '@preact/signals';
import { logout } from '../api';
import { route } from '../route';
import { connection, me, realm, users, userSettings } from '../store';
import { ChannelsOverlay } from './Channels';
import { DraftsOverlay } from './Drafts';
import { MessageView } from './MessageView';
import { MoveDialog } from './MoveDialog';
import { InboxView } from './InboxView';
import { ReadReceipts } from './ReadReceipts';
import { RecentView } from './RecentView';
import { SearchBox } from './SearchBox';
import { SettingsOverlay } from './Settings';
import { ShortcutsOverlay } from './Shortcuts';
import { LeftSidebar } from './Sidebar';
import { EditHistory } from './EditHistory';
import { Lightbox } from './Lightbox';
import { UserCard } from './UserCard';
import { UserList } from './UserList';
import { Avatar } from './Avatar';
import { Icon } from './Icon';

const panel = signal<'' | 'left' | 'right'>('');
const menuOpen = signal(false);

/** Theme: the user's setting (1 system, 2 dark, 3 light) on <html data-theme>. */
export function startTheme(): void {
  const media = window.matchMedia('(prefers-color-scheme: dark)');
  const apply = () => {
    const s = Number(userSettings.value.color_scheme ?? 1);
    const dark = s === 2 || (s !== 3 && media.matches);
    document.documentElement.dataset.theme = dark ? 'dark' : 'light';
  };
  media.addEventListener('change', apply);
  effect(apply);
}

function Menu() {
  if (!menuOpen.value) return null;
  const close = () => { menuOpen.value = false; };
  return (
    <div class="popover menu" role="menu" onKeyDown={(e) => { if (e.key === 'Escape') { e.stopPropagation(); close(); } }}>
      <a role="menuitem" href="#settings" onClick={close}>Settings</a>
      <a role="menuitem" href="#channels/all" onClick={close}>Channels</a>
      <a role="menuitem" href="#drafts" onClick={close}>Drafts</a>
      <a role="menuitem" href="#keyboard-shortcuts" onClick={close}>Keyboard shortcuts</a>
      <button type="button" role="menuitem" class="logout" onClick={() => logout()}>Log out</button>
    </div>
  );
}

export function App() {
  const r = route.value;
  const base = r.view === 'overlay' ? r.under : r;
  const u = users.value.get(me.value);
  return (
    <div class={`app${panel.value ? ` show-${panel.value}` : ''}`}>
      <a class="skip-link" href="#main-content" onClick={(e) => { e.preventDefault(); document.getElementById('main-content')?.focus(); }}>Skip to messages</a>
      <header class="top-bar" role="banner">
        <button type="button" class="icon-button only-narrow" aria-label="Show channels" aria-expanded={panel.value === 'left'}
          onClick={() => { panel.value = panel.value === 'left' ? '' : 'left'; }}><Icon name="menu" /></button>
        <a class="realm-name" href="#">{String(realm.value.realm_name ?? 'hearth')}</a>
        <SearchBox />
        {connection.value === 'reconnecting' && <span class="connection-warning" role="status">Reconnecting…</span>}
        <button type="button" class="icon-button only-narrow" aria-label="Show users" aria-expanded={panel.value === 'right'}
          onClick={() => { panel.value = panel.value === 'right' ? '' : 'right'; }}><Icon name="users" /></button>
        <div class="menu-wrap">
          <button type="button" class="account-button" aria-haspopup="menu" aria-expanded={menuOpen.value}
            onClick={() => { menuOpen.value = !menuOpen.value; }}>
            <Avatar userId={me.value} size={28} cls="small" />
            <span class="account-name">{u?.full_name}</span>
            <span class="sr-only"> (personal menu)</span>
          </button>
          <Menu />
        </div>
      </header>
      <div class="columns" onClick={(e) => { if ((e.target as HTMLElement).closest('a')) panel.value = ''; }}>
        <LeftSidebar />
        <main id="main-content" tabIndex={-1}>
          {base.view === 'recent' ? <RecentView /> : base.view === 'inbox' ? <InboxView /> : base.view === 'narrow' ? <MessageView narrow={base.narrow} /> : null}
        </main>
        <UserList />
      </div>
      {r.view === 'overlay' && r.overlay === 'keyboard-shortcuts' && <ShortcutsOverlay />}
      {r.view === 'overlay' && r.overlay === 'channels' && <ChannelsOverlay />}
      {r.view === 'overlay' && (r.overlay === 'settings' || r.overlay === 'organization') && <SettingsOverlay initial={r.overlay === 'organization' ? 'organization' : (r.args[0] ?? 'profile')} />}
      {r.view === 'overlay' && r.overlay === 'drafts' && <DraftsOverlay />}
      <MoveDialog />
      <UserCard />
      <Lightbox />
      <EditHistory />
      <ReadReceipts />
    </div>
  );
}
