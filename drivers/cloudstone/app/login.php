<?php
// Login: check a user name and password, set the session cookie.
require __DIR__ . '/common.php';
$user = (string)($_POST['user'] ?? '');
$rows = q("SELECT id, password, first_name FROM persons WHERE username = ?", [$user]);
if (!$rows || !hash_equals($rows[0]['password'], (string)($_POST['password'] ?? ''))) {
    http_response_code(403);
    page_start('Login failed');
    echo "<p>Unknown user or wrong password.</p>";
    page_end();
    exit;
}
setcookie('olio_user', (string)$rows[0]['id'], ['httponly' => true, 'path' => '/']);
page_start('Welcome');
echo "<p>Welcome back, ", h($rows[0]['first_name']), ".</p>";
page_end();
