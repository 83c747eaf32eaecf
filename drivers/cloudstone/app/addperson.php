<?php
// AddPerson: register a new person (a real INSERT).
require __DIR__ . '/common.php';
$f = fn(string $k): string => substr((string)($_POST[$k] ?? ''), 0, 200);
if ($f('username') === '') { http_response_code(400); page_start('Missing user name'); page_end(); exit; }
db()->prepare("INSERT INTO persons (username, password, first_name, last_name, email, city, summary, image)
               VALUES (?, ?, ?, ?, ?, ?, ?, ?)")
    ->execute([$f('username'), $f('password'), $f('first_name'), $f('last_name'), $f('email'),
               $f('city'), $f('summary'), int_arg($_POST, 'image', 1)]);
$id = (int)db()->lastInsertId();
page_start('Welcome');
echo "<p>Registered <a href=\"/person.php?id=$id\">", h($f('username')), "</a>.</p>";
page_end();
