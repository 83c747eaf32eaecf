<?php
// HomePage: the next ten events and the tag cloud.
require __DIR__ . '/common.php';
$events = q("SELECT id, title, event_date, image FROM events
             WHERE event_date >= CURRENT_DATE ORDER BY event_date, id LIMIT 10");
$tags = q("SELECT t.tag, COUNT(*) AS n FROM event_tags et JOIN tags t ON t.id = et.tag_id
           GROUP BY t.id ORDER BY n DESC LIMIT 40");
page_start('Olio');
echo "<h1>Upcoming events</h1>";
event_list($events);
echo "<div class=\"tags\">";
foreach ($tags as $t) {
    echo "<a href=\"/tagsearch.php?tag=", urlencode($t['tag']), "\">", h($t['tag']), "</a> ";
}
echo "</div>";
page_end();
