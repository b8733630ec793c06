// Line icons drawn for hearth (inline SVG, so no font or image request is needed).

const PATHS: Record<string, string> = {
  smile: 'M12 3a9 9 0 1 0 0 18a9 9 0 1 0 0-18zM8.5 14.5c1.8 2.2 5.2 2.2 7 0M9 9.5v.5M15 9.5v.5',
  star: 'M12 3.5l2.6 5.4l5.9.8l-4.3 4.1l1 5.8L12 16.8l-5.2 2.8l1-5.8L3.5 9.7l5.9-.8z',
  pencil: 'M4 20l1-4L16 5l3 3L8 19zM14 7l3 3',
  move: 'M4 8h13M14 5l3 3l-3 3M20 16H7M10 13l-3 3l3 3',
  trash: 'M5 7h14M10 7V4h4v3M7 7l1 13h8l1-13M10 11v6M14 11v6',
  clip: 'M8 12l6.5-6.5a3 3 0 0 1 4.2 4.2L10.5 18a5 5 0 0 1-7-7L11 3.5',
  eye: 'M2.5 12S6 5.5 12 5.5S21.5 12 21.5 12S18 18.5 12 18.5S2.5 12 2.5 12zM12 9.5a2.5 2.5 0 1 0 0 5a2.5 2.5 0 1 0 0-5z',
  search: 'M10.5 4a6.5 6.5 0 1 0 0 13a6.5 6.5 0 1 0 0-13zM15.5 15.5L20 20',
  close: 'M6 6l12 12M18 6L6 18',
  menu: 'M4 7h16M4 12h16M4 17h16',
  users: 'M9 11a3.5 3.5 0 1 0 0-7a3.5 3.5 0 1 0 0 7zM2.5 20c.5-4 3-6 6.5-6s6 2 6.5 6M16 4.5a3.5 3.5 0 0 1 0 6.5M18 14c2 .7 3.2 2.7 3.5 6',
  plus: 'M12 5v14M5 12h14',
  check: 'M5 12.5l4.5 4.5L19 7.5',
  quote: 'M5 17l2-5H5V7h5v5l-2 5zM14 17l2-5h-2V7h5v5l-2 5z',
  unread: 'M12 4a8 8 0 1 0 0 16a8 8 0 1 0 0-16zM12 9.5a2.5 2.5 0 1 0 0 5a2.5 2.5 0 1 0 0-5z',
  mute: 'M4 9h4l5-4v14l-5-4H4zM17 9l4 6M21 9l-4 6',
  chevron: 'M9 6l6 6l-6 6',
  lock: 'M6 11h12v9H6zM8.5 11V8a3.5 3.5 0 0 1 7 0v3',
};

export function Icon({ name, filled = false }: { name: keyof typeof PATHS; filled?: boolean }) {
  return (
    <svg class="icon" viewBox="0 0 24 24" width="18" height="18" aria-hidden="true" focusable="false"
      fill={filled ? 'currentColor' : 'none'} stroke="currentColor" stroke-width="1.8" stroke-linecap="round" stroke-linejoin="round">
      <path d={PATHS[name]} />
    </svg>
  );
}
