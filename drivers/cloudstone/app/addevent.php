<?php
// AddEvent: create an event with its tags (real INSERTs in one transaction).
require __DIR__ . '/common.php';
$f = fn(string $k): string => substr((string)($_POST[$k] ?? ''), 0, 500);
$submitter = int_arg($_COOKIE, 'olio_user', int_arg($_POST, 'submitter', 1));
$pdo = db();
$pdo->beginTransaction();
$pdo->prepare("INSERT INTO events (title, description, event_date, submitter_id, address, image, created)
               VALUES (?, ?, ?, ?, ?, ?, NOW())")
    ->execute([$f('title'), $f('description'), $f('event_date') ?: date('Y-m-d'), $submitter,
               $f('address'), int_arg($_POST, 'image', 1)]);
$id = (int)$pdo->lastInsertId();
foreach (array_filter(explode(' ', $f('tags'))) as $tag) {
    $pdo->prepare("INSERT IGNORE INTO tags (tag) VALUES (?)")->execute([$tag]);
    $pdo->prepare("INSERT IGNORE INTO event_tags (event_id, tag_id) SELECT ?, id FROM tags WHERE tag = ?")
        ->execute([$id, $tag]);
}
$pdo->commit();
page_start('Event added');
echo "<p>Added <a href=\"/event.php?id=$id\">", h($f('title')), "</a>.</p>";
page_end();
