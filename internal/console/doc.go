// Package console is the web console for the people who run a community
// (issue 35): groups, members, reports, bans and policy, and the backlog, on
// the status page's server (internal/dashboard mounts it under /console/).
//
// Promises:
//
//   - The console holds no power of its own. What it serves itself is
//     read-only (the pages, and JSON read from the database), behind the status
//     page's own protection (its operator token, or loopback with a checked
//     Host header). Every change is made by the browser, signed by the signed-in
//     key (a NIP-07 extension, or a NIP-46 bunker): NIP-86 calls to the relay with NIP-98 auth, which the relay
//     checks against its admin list (internal/relayadmin), and NIP-29
//     moderation events published to the relay over WebSocket, which the
//     relay's group rules decide (internal/groups) as for any app. There is no
//     second permission system to drift.
//   - The console owns no table and writes no SQL: each list is read through
//     the functions of the package that owns its table (groups.LivePage,
//     store.CommunityMembersPage and EventSummaries, relayadmin.Load and
//     PubkeyStatuses, trust.Ranks, moderation.QueuePage, OpenReports and
//     LabelsOf, membership's pages, consumer.ReadStatus, blossom.DB's
//     TopUploaders and Flagged), so a change of
//     schema has one place to follow (TestConsoleWritesNoSQL).
//   - Secrets stay secret: group invite codes are shown masked in the read
//     views, NIP-43 invites by their id only (a claim's SHA-256 prefix: the
//     claim is not stored); the whole code or claim is shown once, to the
//     admin who minted it.
//   - Lists update without a reload: the page follows the status page's
//     Server-Sent Events stream, whose snapshots carry change markers
//     (dashboard.Snapshot.AdminVersion, GroupsChangedAt, MembersMark, HeadSeq), and reads
//     its list again when one moves.
//   - Lists come a page at a time (Page, PageQuery): keyset paging in each
//     list's stable order, never OFFSET, each page an index range scan; a bad
//     limit, cursor or search is answered 400 with a JSON error. The page
//     renders one page of each list, its place kept in the page's URL. The
//     Media page's two lists are top lists of ?limit= instead (the largest
//     uploaders, the most reported blobs), not pages.
//   - No page can be framed and no inline script runs: every answer carries
//     X-Frame-Options: DENY and a Content-Security-Policy with
//     frame-ancestors 'none' and script-src 'self' (the status page's
//     dashboard.FrameHeaders, then the console's own, which lets the page reach
//     the relay and NIP-46 bunker relays).
//   - No build step: the page is plain HTML, CSS and one script, embedded;
//     nostr-tools' browser bundle (vendored) is loaded only for NIP-46.
package console
