package eventcache

// Holds reports whether the cache holds the event with this id: what the
// tests check of eviction and pinning (the relay asks the cache by filter,
// never by this).
func (c *Cache) Holds(id string) bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.byID[id] != nil
}
