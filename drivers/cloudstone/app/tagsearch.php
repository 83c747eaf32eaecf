<?php
// TagSearch: the events carrying a tag, ten per page.
require __DIR__ . '/common.php';
$tag = (string)($_GET['tag'] ?? '');
$page = max(1, int_arg($_GET, 'page', 1));
$events = q("SELECT e.id, e.title, e.event_date, e.image FROM events e
             JOIN event_tags et ON et.event_id = e.id JOIN tags t ON t.id = et.tag_id
             WHERE t.tag = ? ORDER BY e.event_date DESC, e.id LIMIT 10 OFFSET " . (($page - 1) * 10),
            [$tag]);
page_start('Tag ' . $tag);
echo "<h1>Events tagged ", h($tag), "</h1>";
event_list($events);
page_end();
