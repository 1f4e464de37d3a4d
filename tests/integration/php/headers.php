<?php
// A custom header and three cookies, each its own Set-Cookie.
header('X-Foo: bar');
setcookie('a', '1');
setcookie('b', '2');
setcookie('c', '3', ['path' => '/x', 'httponly' => true]);
echo "headers\n";
