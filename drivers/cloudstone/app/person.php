<?php
// PersonDetail: one person and the events they attend.
require __DIR__ . '/common.php';
$id = int_arg($_GET, 'id');
$p = q("SELECT * FROM persons WHERE id = ?", [$id]);
if (!$p) { http_response_code(404); page_start('No such person'); page_end(); exit; }
$p = $p[0];
$events = q("SELECT e.id, e.title, e.event_date, e.image FROM attendance a
             JOIN events e ON e.id = a.event_id WHERE a.person_id = ? ORDER BY e.event_date DESC LIMIT 10",
            [$id]);
page_start($p['username']);
echo "<h1>", h($p['first_name'] . ' ' . $p['last_name']), "</h1>",
    "<img src=\"/static/img/person_", (int)$p['image'], ".jpg\" alt=\"\">",
    "<p>", h($p['city']), "</p><p>", h($p['summary']), "</p><h2>Attending</h2>";
event_list($events);
page_end();
