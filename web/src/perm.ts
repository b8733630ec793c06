// Group-based permissions as /register describes them.

import { me, realm, users } from './store';

interface Group {
  id: number;
  members: number[];
  direct_subgroup_ids: number[];
}

type Setting = number | { direct_members: number[]; direct_subgroups: number[] } | undefined;

function groups(): Map<number, Group> {
  const m = new Map<number, Group>();
  for (const g of (realm.value.realm_user_groups as Group[] | undefined) ?? []) m.set(g.id, g);
  return m;
}

export function inGroup(groupId: number, userId: number, all = groups(), seen = new Set<number>()): boolean {
  if (seen.has(groupId)) return false;
  seen.add(groupId);
  const g = all.get(groupId);
  if (g === undefined) return false;
  if (g.members.includes(userId)) return true;
  return g.direct_subgroup_ids.some((sub) => inGroup(sub, userId, all, seen));
}

export function allowed(setting: Setting, userId = me.value): boolean {
  if (setting === undefined) return false;
  if (typeof setting === 'number') return inGroup(setting, userId);
  if (setting.direct_members.includes(userId)) return true;
  const all = groups();
  return setting.direct_subgroups.some((g) => inGroup(g, userId, all));
}

export function realmAllows(key: string): boolean {
  return allowed(realm.value[key] as Setting);
}

export function withinLimit(timestamp: number, limitKey: string): boolean {
  const limit = realm.value[limitKey];
  if (limit === null || limit === undefined || limit === 0) return true;
  return Date.now() / 1000 - timestamp < Number(limit);
}

export function canEdit(senderId: number, timestamp: number): boolean {
  if (realm.value.realm_allow_message_editing === false || senderId !== me.value) return false;
  return withinLimit(timestamp, 'realm_message_content_edit_limit_seconds');
}

export function canDelete(senderId: number, timestamp: number): boolean {
  if (realmAllows('realm_can_delete_any_message_group')) return true;
  if (senderId !== me.value || !realmAllows('realm_can_delete_own_message_group')) return false;
  return withinLimit(timestamp, 'realm_message_content_delete_limit_seconds');
}

export function canMoveTopic(timestamp: number): boolean {
  if (!realmAllows('realm_can_move_messages_between_topics_group')) return false;
  const u = users.value.get(me.value);
  if (u !== undefined && u.role <= 300) return true;
  return withinLimit(timestamp, 'realm_move_messages_within_stream_limit_seconds');
}

export function canResolve(): boolean {
  return realmAllows('realm_can_resolve_topics_group');
}
