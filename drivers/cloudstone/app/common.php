<?php
// Shared by every page of the Olio-shaped test application: one PDO connection over
// the MariaDB socket named in config.php (written by vbench at deployment), HTML
// escaping, and the page frame. Kept deliberately small: this app is the SUT of the
// CloudStone workload, not a product.
declare(strict_types=1);
$cfg = require __DIR__ . '/config.php';

function db(): PDO {
    global $cfg;
    static $pdo = null;
    if ($pdo === null) {
        $pdo = new PDO("mysql:unix_socket={$cfg['socket']};dbname={$cfg['database']};charset=utf8mb4",
            $cfg['user'], $cfg['password'],
            [PDO::ATTR_ERRMODE => PDO::ERRMODE_EXCEPTION, PDO::ATTR_EMULATE_PREPARES => false]);
    }
    return $pdo;
}

function h(?string $s): string { return htmlspecialchars((string)$s, ENT_QUOTES, 'UTF-8'); }

function q(string $sql, array $args = []): array {
    $st = db()->prepare($sql);
    $st->execute($args);
    return $st->fetchAll(PDO::FETCH_ASSOC);
}

function page_start(string $title): void {
    echo "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>", h($title),
        "</title><link rel=\"stylesheet\" href=\"/static/site.css\"></head><body>",
        "<div class=\"top\"><img src=\"/static/logo.png\" alt=\"Olio\"> <a href=\"/\">Home</a></div>";
}

function page_end(): void { echo "</body></html>"; }

function event_list(array $events): void {
    echo "<ul class=\"events\">";
    foreach ($events as $e) {
        echo "<li><img src=\"/static/img/event_", (int)$e['image'], ".jpg\" alt=\"\"> ",
            "<a href=\"/event.php?id=", (int)$e['id'], "\">", h($e['title']), "</a> ",
            h($e['event_date']), "</li>";
    }
    echo "</ul>";
}

function int_arg(array $src, string $key, int $default = 0): int {
    return isset($src[$key]) && ctype_digit((string)$src[$key]) ? (int)$src[$key] : $default;
}
