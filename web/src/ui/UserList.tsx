import { useState } from 'preact/hooks';
import { Emoji } from '../emoji';
import { narrowToHash } from '../narrow';
import { me, presenceStatus, slugContext, userStatus, users } from '../store';
import { Avatar } from './Avatar';

const ORDER = { active: 0, idle: 1, offline: 2 };

export function UserList() {
  const [q, setQ] = useState('');
  const lower = q.toLowerCase();
  const list = [...users.value.values()]
    .filter((u) => u.is_active && !u.is_bot && u.full_name.toLowerCase().includes(lower))
    .map((u) => ({ u, status: presenceStatus(u.user_id) }))
    .sort((a, b) => ORDER[a.status] - ORDER[b.status] || a.u.full_name.localeCompare(b.u.full_name));
  return (
    <aside class="right-sidebar" aria-labelledby="users-heading">
      <div class="sidebar-heading"><h2 id="users-heading">Users</h2></div>
      <input type="search" class="sidebar-filter user-filter" placeholder="Search people" aria-label="Search people" value={q}
        onInput={(e) => setQ((e.target as HTMLInputElement).value)} />
      <ul class="user-list">
        {list.map(({ u, status }) => {
          const st = userStatus.value.get(u.user_id);
          return (
            <li key={u.user_id}>
              <a href={narrowToHash([{ operator: 'dm', operand: String(u.user_id) }], slugContext)} title={`Send a direct message to ${u.full_name}`}>
                <span class="avatar-wrap">
                  <Avatar userId={u.user_id} size={24} cls="small" />
                  <span class={`user-circle user-circle-${status}`} role="img" aria-label={status === 'active' ? 'Active' : status === 'idle' ? 'Idle' : 'Offline'} />
                </span>
                <span class="user-name">
                  {u.full_name}{u.user_id === me.value && <span class="muted"> (you)</span>}
                  {st?.emoji_name && st.emoji_code && <> <Emoji type={st.reaction_type ?? 'unicode_emoji'} code={st.emoji_code} name={st.emoji_name} /></>}
                  {st?.status_text && <span class="status-text">{st.status_text}</span>}
                </span>
              </a>
            </li>
          );
        })}
      </ul>
    </aside>
  );
}
