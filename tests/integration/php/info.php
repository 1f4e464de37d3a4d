<?php
// What PHP received: $_SERVER (the FastCGI params), $_GET, $_POST, $_COOKIE.
header('Content-Type: application/json');
echo json_encode(['server' => $_SERVER, 'get' => $_GET, 'post' => $_POST, 'cookie' => $_COOKIE],
                 JSON_UNESCAPED_SLASHES | JSON_INVALID_UTF8_SUBSTITUTE);
