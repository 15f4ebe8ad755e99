use std::collections::HashMap;

pub struct Cache {
    items: HashMap<String, String>,
}

impl Cache {
    pub fn get(&self, key: &str) -> Option<&String> {
        self.items.get(key)
    }
}

fn helper() -> u32 {
    42
}
