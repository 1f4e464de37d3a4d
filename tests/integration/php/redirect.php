<?php
header('Location: /elsewhere');
