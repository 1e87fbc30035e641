package groups

import (
	"slices"
)

// Forest is a set of groups' states by id: every group of the relay
// (Project), or the part of it a batch loaded (the store loads what each of
// its 9002s and 9008s needs: see Settle).
//
// The tree is derived, never stored in one event: a group's parent is its own
// newest 9002's `parent` (Meta.Parent) while that group exists; a group's
// children are the existing groups whose parent it is, in this order:
//
//  1. those its own newest 9002 listed as `child` tags (Meta.Children), in
//     that order, if they were its children already then (adopted, Adopted,
//     before that 9002: a child that left and came back is new again);
//  2. then the others, in the order they were adopted (Adopted: created_at,
//     arrival, id), so a new child is appended.
//
// Both are functions of the states alone, and each state is a function of the
// set of its events (Apply commutes), so the tree of Project is the tree the
// relay kept live, whatever order the events arrived in.
type Forest map[string]*State

// Parent returns id's parent: its Meta.Parent while that group exists, else
// "" (a root).
func (f Forest) Parent(id string) string {
	s := f[id]
	if !s.Exists() || s.Meta.Parent == "" || !f[s.Meta.Parent].Exists() {
		return ""
	}
	return s.Meta.Parent
}

// Children returns id's children in order (see Forest).
func (f Forest) Children(id string) []string {
	var kids []string
	for cid, c := range f {
		if c.Exists() && c.Meta.Parent == id {
			kids = append(kids, cid)
		}
	}
	return f.order(id, kids)
}

// byParent indexes the existing groups of f by their Meta.Parent.
func (f Forest) byParent() map[string][]string {
	out := map[string][]string{}
	for cid, c := range f {
		if c.Exists() && c.Meta.Parent != "" {
			out[c.Meta.Parent] = append(out[c.Meta.Parent], cid)
		}
	}
	return out
}

// order returns kids, the existing groups whose Meta.Parent is id, as id's
// children in order (see Forest); none if id does not exist.
func (f Forest) order(id string, kids []string) []string {
	p := f[id]
	if !p.Exists() {
		return nil
	}
	var out []string
	for _, cid := range p.Meta.Children {
		if slices.Contains(kids, cid) && !slices.Contains(out, cid) && p.MetaAt.Newer(f[cid].Adopted()) {
			out = append(out, cid)
		}
	}
	var rest []string
	for _, cid := range kids {
		if !slices.Contains(out, cid) {
			rest = append(rest, cid)
		}
	}
	slices.SortFunc(rest, func(a, b string) int {
		sa, sb := f[a].Adopted(), f[b].Adopted()
		switch {
		case sa == sb:
			return 0
		case sb.Newer(sa):
			return -1
		}
		return 1
	})
	return append(out, rest...)
}

// Ancestor reports whether anc is id itself or one of its ancestors (parents
// as Parent says), as far as f holds them.
func (f Forest) Ancestor(anc, id string) bool {
	for range len(f) + 1 {
		if id == anc {
			return true
		}
		if id = f.Parent(id); id == "" {
			return false
		}
	}
	return true // a cycle: never made (Decide), but never loop
}

// Settle sets the Tree of each of ids from f and reports those whose Tree
// changed. The caller has loaded into f, for each of ids, its parent and
// every group whose Meta.Parent is that id; for each of parentOnly (groups
// whose children cannot have changed) only its parent, and only its Parent is
// set.
func (f Forest) Settle(ids, parentOnly []string) []string {
	var changed []string
	set := func(id string, t Tree) {
		s := f[id]
		if s == nil {
			return
		}
		if s.Tree.Parent != t.Parent || !slices.Equal(s.Tree.Children, t.Children) {
			s.Tree = t
			changed = append(changed, id)
		}
	}
	kids := f.byParent()
	for _, id := range ids {
		set(id, Tree{Parent: f.Parent(id), Children: f.order(id, kids[id])})
	}
	for _, id := range parentOnly {
		if s := f[id]; s != nil && !slices.Contains(ids, id) {
			set(id, Tree{Parent: f.Parent(id), Children: s.Tree.Children})
		}
	}
	slices.Sort(changed)
	return slices.Compact(changed)
}

// SettleAll sets the Tree of every group of f (f holds every group: Project).
func (f Forest) SettleAll() {
	ids := make([]string, 0, len(f))
	for id := range f {
		ids = append(ids, id)
	}
	f.Settle(ids, nil)
}
