<?php
// A stand-in for an application's entry point (the examples' tests): says
// which file ran and the CGI params it was given, and sends the header
// PHP's expose_php would, for the configs that remove it.
header('Content-Type: application/json');
header('X-Powered-By: PHP/stand-in');
$keys = ['SCRIPT_NAME', 'SCRIPT_FILENAME', 'PATH_INFO', 'REQUEST_URI', 'QUERY_STRING',
         'REQUEST_METHOD', 'DOCUMENT_ROOT', 'DOCUMENT_URI', 'CONTENT_LENGTH',
         'modHeadersAvailable', 'front_controller_active'];
$server = [];
foreach ($keys as $key) {
    if (isset($_SERVER[$key])) $server[$key] = $_SERVER[$key];
}
$body = file_get_contents('php://input');
echo json_encode(['ran' => __FILE__, 'server' => $server, 'body_length' => strlen($body)],
                 JSON_UNESCAPED_SLASHES);
