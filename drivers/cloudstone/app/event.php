<?php
// EventDetail: one event, its tags, attendees and comments.
require __DIR__ . '/common.php';
$id = int_arg($_GET, 'id');
$ev = q("SELECT e.*, p.username FROM events e JOIN persons p ON p.id = e.submitter_id
         WHERE e.id = ?", [$id]);
if (!$ev) { http_response_code(404); page_start('No such event'); page_end(); exit; }
$e = $ev[0];
$tags = q("SELECT t.tag FROM event_tags et JOIN tags t ON t.id = et.tag_id WHERE et.event_id = ?", [$id]);
$att = q("SELECT p.id, p.username, p.image FROM attendance a JOIN persons p ON p.id = a.person_id
          WHERE a.event_id = ? ORDER BY p.id LIMIT 20", [$id]);
$comments = q("SELECT c.body, c.rating, c.created, p.username FROM comments c
               JOIN persons p ON p.id = c.person_id WHERE c.event_id = ? ORDER BY c.id", [$id]);
page_start($e['title']);
echo "<h1>", h($e['title']), "</h1><img src=\"/static/img/event_", (int)$e['image'], ".jpg\" alt=\"\">",
    "<p>", h($e['event_date']), " — ", h($e['address']), "</p><p>", h($e['description']), "</p>",
    "<p>Submitted by <a href=\"/person.php?id=", (int)$e['submitter_id'], "\">", h($e['username']), "</a></p>";
echo "<p>Tags: ";
foreach ($tags as $t) { echo "<a href=\"/tagsearch.php?tag=", urlencode($t['tag']), "\">", h($t['tag']), "</a> "; }
echo "</p><h2>Attending</h2><ul>";
foreach ($att as $a) {
    echo "<li><img src=\"/static/img/person_", (int)$a['image'], ".jpg\" alt=\"\"> ",
        "<a href=\"/person.php?id=", (int)$a['id'], "\">", h($a['username']), "</a></li>";
}
echo "</ul><h2>Comments</h2>";
foreach ($comments as $c) {
    echo "<p><b>", h($c['username']), "</b> (", (int)$c['rating'], "/5): ", h($c['body']), "</p>";
}
page_end();
