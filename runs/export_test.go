package runs

// Held reports what the Manager holds in memory: how many threads, and
// the bytes their hubs retain.
func (m *Manager) Held() (threads, eventBytes int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, t := range m.threads {
		_, b := t.hub.usage()
		eventBytes += b
	}
	return len(m.threads), eventBytes
}

// Holds reports whether the Manager holds the thread in memory.
func (m *Manager) Holds(id string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.threads[id]
	return ok
}
