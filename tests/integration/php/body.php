<?php
// The raw request body: CONTENT_LENGTH as sent, bytes read, md5.
$body = file_get_contents('php://input');
echo $_SERVER['CONTENT_LENGTH'] ?? 'none', ' ', strlen($body), ' ', md5($body);
